package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/hamidra"
)

// HAMi-DRA's chart, release hami-dra: its webhook configurations' names
// and its webhook's client limits (--kube-api-qps, --kube-api-burst).
const (
	hamiDRAMutatingName   = "hami-dra-mutatingwebhookconfiguration"
	hamiDRAValidatingName = "hami-dra-validatingwebhookconfiguration"
	hamiDRAQPS            = 40
	hamiDRABurst          = 60
)

// HAMiDRAWebhookOptions configure StartHAMiDRAWebhook.
type HAMiDRAWebhookOptions struct {
	// NamespaceLabels, when set, narrows both configurations to namespaces
	// carrying these labels (HAMi-DRA's chart registers them for every
	// namespace), e.g. to run it beside hami-webhook in one cluster.
	NamespaceLabels map[string]string
	// Config names the resources it reads (zero: the chart's).
	Config hamidra.Config
}

// HAMiDRAWebhook is the model of HAMi-DRA's webhook
// (internal/localcluster/hamidra) running in this process on 127.0.0.1,
// registered with the apiserver as HAMi-DRA's chart registers it.
type HAMiDRAWebhook struct {
	// URL is where the apiserver calls it (/mutate and /validate).
	URL string
	// CA is the PEM of the CA that signed its certificate.
	CA []byte

	client kubernetes.Interface
	server *http.Server
	dir    string
	done   chan error
}

// StartHAMiDRAWebhook runs the model of HAMi-DRA's webhook and registers
// its mutating (pod CREATE, failurePolicy Fail) and validating (pod
// DELETE, failurePolicy Ignore) configurations, each with sideEffects None
// and a 10 s timeout as the chart has them. Its client is limited as the
// chart's webhook (40 QPS, burst 60).
func StartHAMiDRAWebhook(ctx context.Context, cfg *rest.Config, opts HAMiDRAWebhookOptions) (*HAMiDRAWebhook, error) {
	// controller-runtime logs through klog, as StartWebhook has it;
	// unset, its admission handler prints a stack trace to stderr.
	ctrllog.SetLogger(klog.NewKlogr())
	if opts.Config == (hamidra.Config{}) {
		opts.Config = hamidra.ChartConfig()
	}
	c := rest.CopyConfig(cfg)
	c.UserAgent = "hami-dra-webhook"
	c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(hamiDRAQPS, hamiDRABurst)
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, err
	}
	dir, ca, addr, err := servingSetup("hami-dra-webhook-")
	if err != nil {
		return nil, err
	}
	handlers := hamidra.NewHandlers(client, opts.Config)
	mux := http.NewServeMux()
	mux.Handle("/mutate", &admission.Webhook{Handler: handlers.Mutating()})
	mux.Handle("/validate", &admission.Webhook{Handler: handlers.Validating()})
	w := &HAMiDRAWebhook{URL: "https://" + addr, CA: ca, client: client, dir: dir, done: make(chan error, 1),
		server: &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		w.done <- w.server.ListenAndServeTLS(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	}()
	if err := waitTLS(ctx, addr, ca, time.Minute, w.done); err != nil {
		w.Stop()
		return nil, err
	}
	if err := w.register(ctx, opts.NamespaceLabels); err != nil {
		w.Stop()
		return nil, err
	}
	return w, nil
}

// register creates the two configurations.
func (w *HAMiDRAWebhook) register(ctx context.Context, namespaceLabels map[string]string) error {
	var selector *metav1.LabelSelector
	if len(namespaceLabels) > 0 {
		selector = &metav1.LabelSelector{MatchLabels: namespaceLabels}
	}
	rule := func(op admissionv1.OperationType) []admissionv1.RuleWithOperations {
		return []admissionv1.RuleWithOperations{{
			Operations: []admissionv1.OperationType{op},
			Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
				Scope: ptr.To(admissionv1.AllScopes)},
		}}
	}
	none := admissionv1.SideEffectClassNone
	mutating := &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: hamiDRAMutatingName},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name: "mutate.hami.io", AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionv1.WebhookClientConfig{URL: ptr.To(w.URL + "/mutate"), CABundle: w.CA},
			Rules:        rule(admissionv1.Create), SideEffects: &none, TimeoutSeconds: ptr.To[int32](10),
			NamespaceSelector: selector,
		}},
	}
	validating := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: hamiDRAValidatingName},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "validate.hami.io", AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionv1.WebhookClientConfig{URL: ptr.To(w.URL + "/validate"), CABundle: w.CA},
			Rules:        rule(admissionv1.Delete), SideEffects: &none, TimeoutSeconds: ptr.To[int32](10),
			FailurePolicy: ptr.To(admissionv1.Ignore), NamespaceSelector: selector,
		}},
	}
	registrations := w.client.AdmissionregistrationV1()
	if _, err := registrations.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("register HAMi-DRA's mutating webhook: %w", err)
	}
	if _, err := registrations.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("register HAMi-DRA's validating webhook: %w", err)
	}
	return nil
}

// WaitAdmitting waits until the apiserver sends pods of the namespace to
// the webhook: a dry-run pod asking one nvidia.com/gpu comes back with
// HAMi-DRA's label. The model creates a claim even for a dry run, as the
// webhook does, so each attempt's pod has a name of its own: an attempt
// whose admission failed after the webhook made its claim (the webhook
// call timing out on a busy API server) would otherwise leave a claim
// that refuses every later attempt of the same name. The probes' claims
// are deleted again.
func (w *HAMiDRAWebhook) WaitAdmitting(ctx context.Context, namespace string, limit time.Duration) error {
	var claims []string
	defer func() {
		for _, claim := range claims {
			err := w.client.ResourceV1().ResourceClaims(namespace).Delete(context.WithoutCancel(ctx), claim, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				fmt.Fprintf(os.Stderr, "delete HAMi-DRA probe claim %s/%s: %v\n", namespace, claim, err)
			}
		}
	}()
	var first, last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, limit, true, func(ctx context.Context) (bool, error) {
		probe := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "hami-dra-probe-" + utilrand.String(5), Namespace: namespace},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "probe", Image: "probe",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{hamidra.ChartConfig().CountName: *resource.NewQuantity(1, resource.DecimalSI)}},
			}}},
		}
		claims = append(claims, hamidra.ClaimName(namespace, probe.Name, "probe"))
		got, err := w.client.CoreV1().Pods(namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("labels %v", got.Labels)
		}
		if first == "" {
			first = last
		}
		return err == nil && got.Labels[hamidra.Label] == "true", nil
	})
	if err != nil {
		return fmt.Errorf("a dry-run GPU pod in %s is not mutated by HAMi-DRA's webhook within %s (first: %s; last: %s): %w", namespace, limit, first, last, err)
	}
	return nil
}

// Stop unregisters the webhook, stops it and removes its certificate.
func (w *HAMiDRAWebhook) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	registrations := w.client.AdmissionregistrationV1()
	for _, err := range []error{
		registrations.MutatingWebhookConfigurations().Delete(ctx, hamiDRAMutatingName, metav1.DeleteOptions{}),
		registrations.ValidatingWebhookConfigurations().Delete(ctx, hamiDRAValidatingName, metav1.DeleteOptions{}),
	} {
		if err != nil && !apierrors.IsNotFound(err) {
			fmt.Fprintf(os.Stderr, "unregister HAMi-DRA's webhook: %v\n", err)
		}
	}
	if err := w.server.Shutdown(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "HAMi-DRA webhook: %v\n", err)
	}
	select {
	case err := <-w.done:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "HAMi-DRA webhook: %v\n", err)
		}
	case <-ctx.Done():
	}
	_ = os.RemoveAll(w.dir)
}
