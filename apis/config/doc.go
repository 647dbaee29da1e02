// Package config holds the internal version of the HAMi plugin's args, as
// kube-scheduler's own plugins keep theirs: the v1 package is what users
// write in a KubeSchedulerConfiguration, this one is what the plugin reads
// after defaulting and conversion.
//
// +k8s:deepcopy-gen=package
// +groupName=kubescheduler.config.k8s.io
package config
