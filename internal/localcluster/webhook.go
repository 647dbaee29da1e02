package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
	"github.com/hami-scheduler/hami-scheduler/manifests"
	"github.com/hami-scheduler/hami-scheduler/webhook"
)

// WebhookOptions configure StartWebhook.
type WebhookOptions struct {
	// NamespaceLabels, when set, narrows the shipped namespaceSelector
	// further to namespaces carrying these labels (an e2e test scopes its
	// webhook to its own namespace this way); the shipped exclusions stay.
	NamespaceLabels map[string]string
	// Configuration is the MutatingWebhookConfiguration to register, e.g.
	// one the chart renders with other values (nil: manifests/webhook.yaml's).
	Configuration *admissionv1.MutatingWebhookConfiguration
	// ConfigurationName names the MutatingWebhookConfiguration
	// (default: Configuration's name, else the shipped one, hami-webhook).
	ConfigurationName string
	// Vendors are the vendors whose defaults the webhook applies, as the
	// scheduler's device config enables them (nil: NVIDIA alone).
	Vendors []devices.Config
}

// Webhook is hami-webhook running in this process on 127.0.0.1 and
// registered with the apiserver.
type Webhook struct {
	// URL is where the apiserver calls it.
	URL string
	// CA is the PEM of the CA that signed its certificate.
	CA []byte

	client kubernetes.Interface
	name   string
	dir    string
	cancel context.CancelFunc
	done   chan error
}

// StartWebhook runs the admission webhook (webhook.Run, as cmd/hami-webhook
// does) with a fresh certificate, waits until it answers TLS, and registers
// a MutatingWebhookConfiguration for pod CREATE pointing at it.
func StartWebhook(ctx context.Context, cfg *rest.Config, opts WebhookOptions) (*Webhook, error) {
	// controller-runtime logs through klog, as in cmd/hami-webhook;
	// unset, it prints a stack trace to stderr (hami-local's terminal).
	ctrllog.SetLogger(klog.NewKlogr())
	registry, err := vendors.NewRegistry(opts.Vendors)
	if err != nil {
		return nil, err
	}
	dir, ca, addr, err := servingSetup("hami-webhook-")
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Webhook{URL: "https://" + addr + webhook.MutatePath, CA: ca, client: client, dir: dir, cancel: cancel, done: make(chan error, 1)}
	go func() {
		w.done <- webhook.Run(ctx, cfg, webhook.Options{
			Config: webhook.Config{
				SchedulerName:            webhook.DefaultSchedulerName,
				TakeOverDefaultScheduler: true,
				Registry:                 registry,
			},
			Server:          webhook.ServerOptions{Addr: addr, CertDir: dir},
			HealthProbeAddr: "0",
			MetricsAddr:     "0",
		})
	}()
	if err := w.waitServing(ctx, addr, 60*time.Second); err != nil {
		w.Stop()
		return nil, err
	}
	if err := w.register(ctx, opts); err != nil {
		w.Stop()
		return nil, err
	}
	return w, nil
}

// waitServing polls until the webhook completes a TLS handshake with its
// certificate (it listens only once its informer cache has synced).
func (w *Webhook) waitServing(ctx context.Context, addr string, limit time.Duration) error {
	return waitTLS(ctx, addr, w.CA, limit, w.done)
}

// waitTLS polls until a TLS handshake with addr succeeds, verified
// against ca, at most limit; an error on done means the server exited.
func waitTLS(ctx context.Context, addr string, ca []byte, limit time.Duration, done <-chan error) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	deadline := time.Now().Add(limit)
	for {
		select {
		case err := <-done:
			return fmt.Errorf("webhook exited: %v", err)
		default:
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook at %s not serving after %s: %w", addr, limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (w *Webhook) register(ctx context.Context, opts WebhookOptions) error {
	config, err := ShippedWebhookConfiguration(w.URL, w.CA, opts)
	if err != nil {
		return err
	}
	w.name = config.Name
	if _, err := w.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, config, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("register webhook: %w", err)
	}
	return nil
}

// ShippedWebhookConfiguration is the MutatingWebhookConfiguration of
// manifests/webhook.yaml (or opts.Configuration), pointed at url (instead
// of the in-cluster Service) with ca as its CA bundle, and narrowed by
// opts.
func ShippedWebhookConfiguration(url string, ca []byte, opts WebhookOptions) (*admissionv1.MutatingWebhookConfiguration, error) {
	config := opts.Configuration.DeepCopy()
	if config == nil {
		var err error
		if config, err = shippedMutatingWebhook(); err != nil {
			return nil, err
		}
	}
	if opts.ConfigurationName != "" {
		config.Name = opts.ConfigurationName
	}
	for i := range config.Webhooks {
		wh := &config.Webhooks[i]
		wh.ClientConfig = admissionv1.WebhookClientConfig{URL: ptr.To(url), CABundle: ca}
		if len(opts.NamespaceLabels) == 0 {
			continue
		}
		if wh.NamespaceSelector == nil {
			wh.NamespaceSelector = &metav1.LabelSelector{}
		}
		if wh.NamespaceSelector.MatchLabels == nil {
			wh.NamespaceSelector.MatchLabels = map[string]string{}
		}
		maps.Copy(wh.NamespaceSelector.MatchLabels, opts.NamespaceLabels)
	}
	return config, nil
}

// shippedMutatingWebhook decodes the MutatingWebhookConfiguration out of
// the multi-document manifests/webhook.yaml.
func shippedMutatingWebhook() (*admissionv1.MutatingWebhookConfiguration, error) {
	config := &admissionv1.MutatingWebhookConfiguration{}
	if err := shippedObject(manifests.WebhookYAML, "manifests/webhook.yaml", "MutatingWebhookConfiguration", config); err != nil {
		return nil, err
	}
	return config, nil
}

// shippedObject decodes the first object of kind out of a multi-document
// manifest (named file in errors) into obj, strictly.
func shippedObject(manifest []byte, file, kind string, obj any) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s has no %s", file, kind)
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", file, err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return fmt.Errorf("read %s: %w", file, err)
		}
		if meta.Kind != kind {
			continue
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return fmt.Errorf("decode %s %s: %w", file, kind, err)
		}
		return nil
	}
}

// Stop unregisters the webhook, stops it and removes its certificate.
func (w *Webhook) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := w.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, w.name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(os.Stderr, "unregister webhook %s: %v\n", w.name, err)
	}
	w.cancel()
	select {
	case err := <-w.done:
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(os.Stderr, "webhook: %v\n", err)
		}
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "webhook did not stop within 30s")
	}
	_ = os.RemoveAll(w.dir)
}

// WaitAdmitting waits until the API server sends pods of the namespace to
// the webhook (WaitWebhookAdmits), which then gives them
// webhook.DefaultSchedulerName.
func (w *Webhook) WaitAdmitting(ctx context.Context, namespace string, resource corev1.ResourceName, limit time.Duration) error {
	if err := WaitWebhookAdmits(ctx, w.client, namespace, resource, webhook.DefaultSchedulerName, limit); err != nil {
		return fmt.Errorf("webhook %s: %w", w.name, err)
	}
	return nil
}

// WaitWebhookAdmits waits until the API server sends pods to a webhook: a
// registered configuration takes the API server a moment to pick up, and a
// device pod created before then keeps default-scheduler. It dry-runs the
// creation of a pod in the namespace asking one of resource, until the
// answer comes back with schedulerName.
func WaitWebhookAdmits(ctx context.Context, client kubernetes.Interface, namespace string, resource corev1.ResourceName, schedulerName string, limit time.Duration) error {
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "hami-webhook-probe-", Namespace: namespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "probe", Image: "probe",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{resource: *apiresource.NewQuantity(1, apiresource.DecimalSI)}},
		}}},
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, limit, true, func(ctx context.Context) (bool, error) {
		got, err := client.CoreV1().Pods(namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = "schedulerName " + got.Spec.SchedulerName
		return got.Spec.SchedulerName == schedulerName, nil
	})
	if err != nil {
		return fmt.Errorf("a dry-run device pod in %s is not given %s within %s (last: %s): %w", namespace, schedulerName, limit, last, err)
	}
	return nil
}
