package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
	"github.com/hami-scheduler/hami-scheduler/webhook"
)

// WebhookOptions configure StartWebhook.
type WebhookOptions struct {
	// NamespaceSelector limits the namespaces whose pods are sent to the
	// webhook; nil sends every namespace not labelled hami.io/webhook=ignore.
	NamespaceSelector *metav1.LabelSelector
	// ConfigurationName names the MutatingWebhookConfiguration
	// (default "hami-webhook").
	ConfigurationName string
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
	registry, err := vendors.NewRegistry(nil)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hami-webhook-")
	if err != nil {
		return nil, err
	}
	ca, err := writeServingCert(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	ports, err := freePorts(1)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Webhook{URL: "https://" + addr + webhook.MutatePath, CA: ca, client: client, dir: dir, cancel: cancel, done: make(chan error, 1)}
	w.name = opts.ConfigurationName
	if w.name == "" {
		w.name = "hami-webhook"
	}
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
	if err := w.register(ctx, opts.NamespaceSelector); err != nil {
		w.Stop()
		return nil, err
	}
	return w, nil
}

// waitServing polls until the webhook completes a TLS handshake with its
// certificate (it listens only once its informer cache has synced).
func (w *Webhook) waitServing(ctx context.Context, addr string, limit time.Duration) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(w.CA)
	deadline := time.Now().Add(limit)
	for {
		select {
		case err := <-w.done:
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

func (w *Webhook) register(ctx context.Context, selector *metav1.LabelSelector) error {
	if selector == nil {
		selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "hami.io/webhook", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"ignore"},
		}}}
	}
	fail := admissionv1.Fail
	none := admissionv1.SideEffectClassNone
	config := &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: w.name},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:                    "pods.webhook.hami.io",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			TimeoutSeconds:          ptr.To[int32](10),
			ClientConfig:            admissionv1.WebhookClientConfig{URL: ptr.To(w.URL), CABundle: w.CA},
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector: selector,
		}},
	}
	_, err := w.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, config, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("register webhook: %w", err)
	}
	return nil
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
