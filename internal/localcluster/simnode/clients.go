package simnode

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/client-go/util/flowcontrol"
)

// clientMaker makes API clients that share one HTTP client (one transport,
// one connection pool) and differ only in their rate limiter.
type clientMaker struct {
	config *rest.Config
	http   *http.Client
	qps    float32
	burst  int
}

// newClientMaker prepares clients for cfg, their requests wrapped by wrap
// (nil: as they are), each limited to qps with burst; qps <= 0 means no
// limit at all.
func newClientMaker(cfg *rest.Config, wrap transport.WrapperFunc, qps float32, burst int) (*clientMaker, error) {
	c := rest.CopyConfig(cfg)
	if wrap != nil {
		c.Wrap(wrap)
	}
	// The limiter is the client's, not the transport's: every client made
	// here shares this HTTP client.
	c.RateLimiter = nil
	httpClient, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("http client: %w", err)
	}
	if qps > 0 && burst < 1 {
		burst = 1
	}
	return &clientMaker{config: c, http: httpClient, qps: qps, burst: burst}, nil
}

// client returns a new client with a rate limiter of its own.
func (m *clientMaker) client() (corev1client.CoreV1Interface, error) {
	cs, err := m.clientset()
	if err != nil {
		return nil, err
	}
	return cs.CoreV1(), nil
}

// clientset returns a new clientset whose API groups share one rate
// limiter of its own, as one process's client does (a kubelet's core and
// resource calls, a DRA driver's).
func (m *clientMaker) clientset() (kubernetes.Interface, error) {
	c := rest.CopyConfig(m.config)
	if m.qps > 0 {
		c.QPS, c.Burst = m.qps, m.burst
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(m.qps, m.burst)
	} else {
		// A negative QPS turns client-go's default limiter off.
		c.QPS, c.Burst, c.RateLimiter = -1, 0, nil
	}
	return kubernetes.NewForConfigAndClient(c, m.http)
}
