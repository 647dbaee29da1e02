package coscheduling

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
)

// podGroups reads scheduler-plugins' PodGroups from an informer of the
// plugin's own. The API is a CRD, so the informer lists and watches
// through a dynamic client, and a transform turns each object into a
// typed *v1alpha1.PodGroup before it is stored (an object that does not
// convert is stored as an unreadablePodGroup, so that its members get the
// reason instead of a stuck informer).
type podGroups struct {
	informer cache.SharedIndexInformer
	client   dynamic.Interface
}

// unreadablePodGroup stands in the store for a PodGroup object that does
// not convert to the typed API.
type unreadablePodGroup struct {
	metav1.ObjectMeta
	err error
}

func newPodGroups(client dynamic.Interface) (*podGroups, error) {
	informer := dynamicinformer.NewFilteredDynamicInformer(client, v1alpha1.Resource, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	if err := informer.SetTransform(toPodGroup); err != nil {
		return nil, fmt.Errorf("PodGroup informer: %w", err)
	}
	return &podGroups{informer: informer, client: client}, nil
}

// toPodGroup is the informer's transform: an unstructured PodGroup becomes
// typed; anything else (a tombstone) passes through.
func toPodGroup(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	pg := &v1alpha1.PodGroup{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pg); err != nil {
		bad := &unreadablePodGroup{err: err}
		bad.Namespace, bad.Name, bad.UID = u.GetNamespace(), u.GetName(), u.GetUID()
		bad.ResourceVersion = u.GetResourceVersion()
		return bad, nil
	}
	return pg, nil
}

// get returns the PodGroup namespace/name: a NotFound error when the
// informer holds none, another error when the object cannot be read.
func (g *podGroups) get(namespace, name string) (*v1alpha1.PodGroup, error) {
	obj, exists, err := g.informer.GetStore().GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(v1alpha1.Resource.GroupResource(), name)
	}
	switch pg := obj.(type) {
	case *v1alpha1.PodGroup:
		return pg, nil
	case *unreadablePodGroup:
		return nil, fmt.Errorf("PodGroup %s/%s cannot be read: %w", namespace, name, pg.err)
	default:
		return nil, fmt.Errorf("PodGroup %s/%s: store holds %T", namespace, name, obj)
	}
}

// creationTime is the PodGroup's creation time, and false when the
// informer holds no readable PodGroup of that name.
func (g *podGroups) creationTime(namespace, name string) (time.Time, bool) {
	pg, err := g.get(namespace, name)
	if err != nil {
		return time.Time{}, false
	}
	return pg.CreationTimestamp.Time, true
}

// served reports whether the API server serves PodGroups
// (scheduling.x-k8s.io/v1alpha1 podgroups): the CRD is installed.
func served(cfg *rest.Config) (bool, error) {
	client, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	list, err := client.ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == v1alpha1.Resource.Resource {
			return true, nil
		}
	}
	return false, nil
}
