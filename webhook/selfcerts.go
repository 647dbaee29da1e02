package webhook

import (
	"fmt"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// SelfManagedCerts make the webhook issue and rotate its own serving
// certificate (open-policy-agent/cert-controller): a CA and a certificate
// for DNSName are kept in a Secret, written to the server's CertDir (the
// server reloads them), renewed before they expire, and the CA is injected
// into the MutatingWebhookConfiguration's caBundle. Every replica runs it;
// they share the Secret.
type SelfManagedCerts struct {
	// SecretNamespace and SecretName locate the Secret that holds the CA and
	// the serving certificate. It must exist (it may be empty).
	SecretNamespace, SecretName string
	// DNSName is the name the API server calls, e.g.
	// hami-webhook.hami-system.svc; ExtraDNSNames are more.
	DNSName       string
	ExtraDNSNames []string
	// WebhookConfiguration is the MutatingWebhookConfiguration whose
	// caBundle is kept current.
	WebhookConfiguration string
}

// Validate reports settings the rotator cannot work with.
func (c *SelfManagedCerts) Validate() error {
	switch {
	case c.SecretNamespace == "" || c.SecretName == "":
		return fmt.Errorf("self-managed certificates need the Secret's namespace and name")
	case c.DNSName == "":
		return fmt.Errorf("self-managed certificates need the DNS name the API server calls")
	case c.WebhookConfiguration == "":
		return fmt.Errorf("self-managed certificates need the MutatingWebhookConfiguration's name")
	}
	return nil
}

// addRotator registers the rotator with the manager and returns a channel
// closed once the certificate is written to the server's CertDir.
func (c *SelfManagedCerts) addRotator(mgr manager.Manager, server ServerOptions) (<-chan struct{}, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: c.SecretNamespace, Name: c.SecretName},
		CertDir:        server.CertDir,
		CertName:       server.CertName,
		KeyName:        server.KeyName,
		CAName:         "hami-webhook-ca",
		CAOrganization: "hami-scheduler",
		DNSName:        c.DNSName,
		ExtraDNSNames:  c.ExtraDNSNames,
		IsReady:        ready,
		Webhooks:       []rotator.WebhookInfo{{Name: c.WebhookConfiguration, Type: rotator.Mutating}},
		// Replicas share the Secret: none needs to lead.
		RequireLeaderElection: false,
	})
	if err != nil {
		return nil, fmt.Errorf("self-managed certificates: %w", err)
	}
	return ready, nil
}
