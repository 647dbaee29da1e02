package e2e

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/webhook"
)

// The webhook issues its own serving certificate, puts its CA into the
// MutatingWebhookConfiguration, and after a rotation (the Secret emptied)
// issues a new one: the API server keeps calling it.
func TestWebhookManagesItsCertificates(t *testing.T) {
	ctrllog.SetLogger(klog.NewKlogr())
	e := newEnv(t, "certs")
	const label = "e2e.hami.io/self-certs"
	patch := []byte(`{"metadata":{"labels":{"` + label + `":"on"}}}`)
	if _, err := controlPlane.Client.CoreV1().Namespaces().Patch(e.ctx, e.ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "hami-webhook-certs"}}
	if _, err := controlPlane.Client.CoreV1().Secrets(e.ns).Create(e.ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	const configName = "hami-webhook-self-certs"
	config, err := localcluster.ShippedWebhookConfiguration("https://localhost:"+strconv.Itoa(port)+webhook.MutatePath, nil,
		localcluster.WebhookOptions{ConfigurationName: configName, NamespaceLabels: map[string]string{label: "on"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := controlPlane.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(e.ctx, config, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = controlPlane.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), configName, metav1.DeleteOptions{})
	})

	// The kubelet's part: the Secret, mounted as the webhook's CertDir.
	certDir := t.TempDir()
	go mountSecret(e.ctx, e.ns, secret.Name, certDir)

	registry, err := vendors.NewRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- webhook.Run(ctx, controlPlane.Config, webhook.Options{
			Config: webhook.Config{SchedulerName: webhook.DefaultSchedulerName, TakeOverDefaultScheduler: true, Registry: registry},
			Server: webhook.ServerOptions{Addr: "127.0.0.1:" + strconv.Itoa(port), CertDir: certDir, CertName: "tls.crt", KeyName: "tls.key",
				ReadTimeout: webhook.DefaultReadTimeout, WriteTimeout: webhook.DefaultWriteTimeout, MaxRequestBytes: webhook.DefaultMaxRequestBytes},
			HealthProbeAddr: "0",
			MetricsAddr:     "0",
			Certificates: &webhook.SelfManagedCerts{SecretNamespace: e.ns, SecretName: secret.Name,
				DNSName: "localhost", WebhookConfiguration: configName},
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("webhook: %v", err)
		}
	})

	memOnly := func(name string) *corev1.Pod {
		p := e.pod(name)
		p.Spec.SchedulerName = ""
		p.Spec.Containers = []corev1.Container{{Name: "main", Image: "cuda:sim", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{nvidia.DefaultMemoryName: *resource.NewQuantity(1000, resource.DecimalSI)},
		}}}
		return p
	}
	// The pod is admitted only through the webhook (failurePolicy Fail),
	// and comes back with the card count it added.
	admitted := func(name string) bool {
		created, err := controlPlane.Client.CoreV1().Pods(e.ns).Create(e.ctx, memOnly(name), metav1.CreateOptions{})
		if err != nil {
			return false
		}
		_, added := created.Spec.Containers[0].Resources.Limits[nvidia.DefaultCountName]
		return added
	}
	caBundle := func() []byte {
		c, err := controlPlane.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(e.ctx, configName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Webhooks[0].ClientConfig.CABundle
	}
	attempt := 0
	e.eventually("the API server calls the webhook with its own certificate", func() (bool, string) {
		attempt++
		return admitted("before-" + strconv.Itoa(attempt)), "not admitted through the webhook yet"
	})
	first := caBundle()
	if len(first) == 0 {
		t.Fatal("the caBundle was not injected")
	}

	// Rotation: the Secret loses its certificates; the rotator issues new
	// ones, writes them for the server and injects the new CA.
	s, err := controlPlane.Client.CoreV1().Secrets(e.ns).Get(e.ctx, secret.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data = nil
	if _, err := controlPlane.Client.CoreV1().Secrets(e.ns).Update(e.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("a new CA in the caBundle", func() (bool, string) {
		return !bytes.Equal(caBundle(), first), "caBundle unchanged"
	})
	attempt = 0
	e.eventually("the API server calls the webhook after the rotation", func() (bool, string) {
		attempt++
		return admitted("after-" + strconv.Itoa(attempt)), "not admitted through the webhook"
	})
}

// mountSecret plays the kubelet's Secret volume: it writes the Secret's
// tls.crt and tls.key into dir whenever they change, until ctx ends.
func mountSecret(ctx context.Context, namespace, name, dir string) {
	var last []byte
	for ctx.Err() == nil {
		s, err := controlPlane.Client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil && len(s.Data["tls.crt"]) > 0 && len(s.Data["tls.key"]) > 0 && !bytes.Equal(s.Data["tls.crt"], last) {
			for _, f := range []string{"tls.key", "tls.crt"} {
				tmp := filepath.Join(dir, "."+f)
				if os.WriteFile(tmp, s.Data[f], 0o600) == nil {
					_ = os.Rename(tmp, filepath.Join(dir, f))
				}
			}
			last = s.Data["tls.crt"]
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
