package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is scheduler-plugins' scheduling API group.
const GroupName = "scheduling.x-k8s.io"

// SchemeGroupVersion is the group version of PodGroup.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource is the PodGroup resource, as dynamic clients and informers name it.
var Resource = SchemeGroupVersion.WithResource("podgroups")

var (
	// SchemeBuilder registers PodGroup and PodGroupList.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &PodGroup{}, &PodGroupList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
