package manifestgen

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Decode turns rendered YAML documents into objects; a document without
// kind or name is an error.
func Decode(docs []string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, doc := range docs {
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
			return nil, fmt.Errorf("%w in\n%s", err, doc)
		}
		if o.GetKind() == "" || o.GetName() == "" {
			return nil, fmt.Errorf("document without kind or name:\n%s", doc)
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// Find is the first object of the kind, and of the name unless name is
// empty; nil when there is none.
func Find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			return o
		}
	}
	return nil
}

// ObjectKey names an object in messages: apiVersion/Kind namespace/name.
func ObjectKey(o *unstructured.Unstructured) string {
	return o.GetAPIVersion() + "/" + o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// ApplyDryRun creates every object with a server-side dry run, as `kubectl
// apply --dry-run=server` does for new objects, and returns one error per
// object the server refused. Namespaces and ServiceAccounts are created
// for real first, since the dry run of the namespaced objects and pods
// needs them (no namespace controller empties them later). An object that
// already exists (those, or a cluster-wide one created before) gets a
// server-side apply with dry run instead, as `kubectl apply --server-side
// --dry-run=server` would. A pod made from each Deployment's template is
// dry-run too, so that pod admission (Pod Security, priority classes) sees
// what the ReplicaSet would create.
func ApplyDryRun(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured) ([]error, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	groups, err := restmapper.GetAPIGroupResources(client.Discovery())
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	if err := createPrerequisites(ctx, client, objs); err != nil {
		return nil, err
	}
	var errs []error
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			continue
		}
		if err := dryRunObject(ctx, client, dyn, mapper, o); err != nil {
			errs = append(errs, err)
		}
	}
	return errs, nil
}

// createPrerequisites creates the Namespaces (with their labels) and
// ServiceAccounts among objs for real, where missing.
func createPrerequisites(ctx context.Context, client kubernetes.Interface, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if o.GetKind() != "Namespace" {
			continue
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.GetName(), Labels: o.GetLabels()}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
	}
	for _, o := range objs {
		if o.GetKind() != "ServiceAccount" {
			continue
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace()}}
		if _, err := client.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create ServiceAccount %s/%s: %w", sa.Namespace, sa.Name, err)
		}
	}
	return nil
}

// dryRunObject dry-runs one object (and a pod of a Deployment's template).
func dryRunObject(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, mapper meta.RESTMapper, o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s: %w", ObjectKey(o), err)
	}
	var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if o.GetNamespace() == "" {
			return fmt.Errorf("%s has no namespace", ObjectKey(o))
		}
		ri = dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "hami-dry-run", FieldValidation: metav1.FieldValidationStrict}
	_, err = ri.Create(ctx, o, dryRun)
	if apierrors.IsAlreadyExists(err) {
		var raw []byte
		if raw, err = json.Marshal(o.Object); err == nil {
			_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, raw, metav1.PatchOptions{
				DryRun: []string{metav1.DryRunAll}, FieldManager: "hami-dry-run", Force: ptr.To(true), FieldValidation: metav1.FieldValidationStrict})
		}
	}
	if err != nil {
		return fmt.Errorf("dry-run create %s: %w", ObjectKey(o), err)
	}
	if o.GetKind() != "Deployment" {
		return nil
	}
	var d appsv1.Deployment
	if err := kruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
		return err
	}
	pod := &corev1.Pod{ObjectMeta: d.Spec.Template.ObjectMeta, Spec: d.Spec.Template.Spec}
	pod.Name, pod.Namespace = d.Name+"-dry-run", d.Namespace
	if _, err := client.CoreV1().Pods(d.Namespace).Create(ctx, pod, dryRun); err != nil {
		return fmt.Errorf("dry-run create a pod of Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}
