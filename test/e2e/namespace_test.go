package e2e

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
)

// With the controllers hami-local runs, kubectl delete namespace empties
// the namespace and removes it, rather than leaving it Terminating.
func TestNamespaceDeletion(t *testing.T) {
	e := newEnv(t, "delete-ns")
	controllers, err := localcluster.StartControllers(e.ctx, controlPlane.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer controllers.Stop()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "settings"}, Data: map[string]string{"a": "b"}}
	if _, err := controlPlane.Client.CoreV1().ConfigMaps(e.ns).Create(e.ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.create(e.pod("idle", gpu{name: "main"}))
	if err := controlPlane.Client.CoreV1().Namespaces().Delete(e.ctx, e.ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("namespace "+e.ns+" removed", func() (bool, string) {
		ns, err := controlPlane.Client.CoreV1().Namespaces().Get(e.ctx, e.ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, string(ns.Status.Phase)
	})
}
