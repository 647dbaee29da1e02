package release

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/hack/manifestgen"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
)

// applyOrder puts the kinds others depend on first, as helm installs them.
var applyOrder = []string{
	"CustomResourceDefinition", "Namespace", "PriorityClass", "ServiceAccount", "Secret", "ConfigMap",
	"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service",
}

// apply creates the release namespace and every rendered object as an
// administrator, then points the MutatingWebhookConfiguration at the
// proxy that stands for the webhook's Service.
func (r *Release) apply(ctx context.Context) error {
	client := r.cp.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.Namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", r.Namespace, err)
	}
	dyn, err := dynamic.NewForConfig(r.cp.Config)
	if err != nil {
		return err
	}
	groups, err := restmapper.GetAPIGroupResources(client.Discovery())
	if err != nil {
		return err
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	objs := slices.Clone(r.Objects)
	rank := func(o *unstructured.Unstructured) int {
		if i := slices.Index(applyOrder, o.GetKind()); i >= 0 {
			return i
		}
		return len(applyOrder)
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	for _, o := range objs {
		o = o.DeepCopy()
		if o.GetKind() == "MutatingWebhookConfiguration" {
			if err := r.pointAtProxy(o); err != nil {
				return err
			}
		}
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s: %w", manifestgen.ObjectKey(o), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if o.GetNamespace() != "" {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		data, err := o.MarshalJSON()
		if err != nil {
			return err
		}
		// Server-side apply, so that installing another value set over an
		// earlier one updates what changed.
		if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "helm", Force: ptr.To(true)}); err != nil {
			return fmt.Errorf("apply %s: %w", manifestgen.ObjectKey(o), err)
		}
		if o.GetKind() == "CustomResourceDefinition" {
			// helm install waits for it before it applies the rest.
			if err := localcluster.WaitCRDEstablished(ctx, r.cp.Config, o.GetName()); err != nil {
				return err
			}
		}
	}
	return nil
}

// pointAtProxy replaces each webhook's service reference by the proxy's
// URL, keeping the path.
func (r *Release) pointAtProxy(o *unstructured.Unstructured) error {
	hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
	if err != nil {
		return err
	}
	for i := range hooks {
		h := hooks[i].(map[string]any)
		path, _, _ := unstructured.NestedString(h, "clientConfig", "service", "path")
		unstructured.RemoveNestedField(h, "clientConfig", "service")
		if err := unstructured.SetNestedField(h, r.proxy.url(path), "clientConfig", "url"); err != nil {
			return err
		}
	}
	return unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
}
