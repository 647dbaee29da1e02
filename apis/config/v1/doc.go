// Package v1 is the versioned HAMi plugin args users write in a
// KubeSchedulerConfiguration's pluginConfig (kind HAMiArgs of
// kubescheduler.config.k8s.io/v1).
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/hami-scheduler/hami-scheduler/apis/config
// +k8s:defaulter-gen=TypeMeta
// +groupName=kubescheduler.config.k8s.io
package v1
