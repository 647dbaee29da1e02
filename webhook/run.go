package webhook

import (
	"context"
	"fmt"
	"net/http"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Options are everything cmd/hami-webhook configures.
type Options struct {
	Config
	Server ServerOptions
	// HealthProbeAddr serves /healthz and /readyz over plain HTTP.
	HealthProbeAddr string
	// MetricsAddr serves Prometheus /metrics; "0" disables.
	MetricsAddr string
	// MetricsSecure serves /metrics over HTTPS (a self-signed certificate
	// unless MetricsCertDir holds tls.crt and tls.key) to clients whose
	// token the API server authenticates (TokenReview) and who may get the
	// non-resource URL /metrics (SubjectAccessReview); otherwise /metrics is
	// plain HTTP for anyone.
	MetricsSecure bool
	// MetricsCertDir holds the metrics server's tls.crt and tls.key.
	MetricsCertDir string
	// Certificates, when set, makes the webhook issue and rotate its own
	// serving certificate and keep the MutatingWebhookConfiguration's
	// caBundle current; otherwise the certificate in Server.CertDir is
	// provided from outside (a Secret, cert-manager).
	Certificates *SelfManagedCerts
}

// Run serves the webhook until ctx ends. The server starts listening only
// once the informer cache of pods and ResourceQuotas has synced, so /readyz
// (which the Service's endpoints follow) never admits a replica that would
// check quotas against an empty cache.
func Run(ctx context.Context, restConfig *rest.Config, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := admissionregistrationv1.AddToScheme(scheme); err != nil {
		return err
	}
	metrics := metricsserver.Options{BindAddress: o.MetricsAddr}
	if o.MetricsSecure {
		metrics.SecureServing = true
		metrics.CertDir = o.MetricsCertDir
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	mgr, err := manager.New(restConfig, manager.Options{
		Scheme:                 scheme,
		Cache:                  CacheOptions(o.Registry),
		Metrics:                metrics,
		HealthProbeBindAddress: o.HealthProbeAddr,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	// Register the informers now so that they start, and are waited for,
	// with the cache rather than on the first admission request.
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.ResourceQuota{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("register informer: %w", err)
		}
	}
	hook, err := NewHTTPHandler(o.Config, mgr.GetCache())
	if err != nil {
		return err
	}
	if o.Certificates != nil {
		ready, err := o.Certificates.addRotator(mgr, o.Server)
		if err != nil {
			return err
		}
		o.Server.CertsReady = ready
	}
	server := NewServer(o.Server, map[string]http.Handler{MutatePath: hook})
	if err := mgr.Add(server); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", server.ReadyCheck); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// NewHTTPHandler wraps the admission Handler in controller-runtime's
// AdmissionReview HTTP handling: it decodes the review (v1 or v1beta1),
// answers malformed ones with a 400 review, recovers a panic into a 500
// review, and records controller-runtime's webhook request metrics
// (controller_runtime_webhook_requests_total, _latency_seconds,
// _in_flight, labelled with MutatePath) in its metrics registry, which the
// manager's metrics endpoint serves.
func NewHTTPHandler(cfg Config, reader client.Reader) (http.Handler, error) {
	handler, err := NewHandler(cfg, reader)
	if err != nil {
		return nil, err
	}
	return admission.StandaloneWebhook(
		&admission.Webhook{Handler: handler, RecoverPanic: ptr.To(true)},
		admission.StandaloneOptions{MetricsPath: MutatePath},
	)
}
