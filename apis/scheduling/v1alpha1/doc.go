// Package v1alpha1 is the PodGroup API of kubernetes-sigs/scheduler-plugins
// (group scheduling.x-k8s.io, version v1alpha1), which Coscheduling users
// and Kubeflow's training operators write: a PodGroup names how many of its
// pods must be placed together (minMember), and pods join it with the label
// scheduling.x-k8s.io/pod-group=<PodGroup name>. The types are defined here,
// field for field and tag for tag as scheduler-plugins v0.34 serves them,
// because the module proxy serves no version of sigs.k8s.io/scheduler-plugins;
// the CRD the chart installs (manifests/charts/hami-scheduler/templates/podgroup-crd.yaml)
// has the same schema.
//
// +k8s:deepcopy-gen=package
// +groupName=scheduling.x-k8s.io
package v1alpha1
