package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// ServerOptions configure the webhook's HTTPS server.
type ServerOptions struct {
	// Addr is the host:port to listen on; port 0 picks a free port.
	Addr string
	// CertDir holds CertName and KeyName (PEM). The files are watched and
	// reloaded when they change, so a rotated Secret takes effect without
	// a restart.
	CertDir, CertName, KeyName string
	// CertPollInterval bounds how long a change that file events miss
	// (e.g. a Secret volume's symlink swap) takes to be picked up.
	CertPollInterval time.Duration
	// ReadTimeout bounds reading a whole request (TLS handshake, headers and
	// body); WriteTimeout bounds handling it and writing the answer;
	// IdleTimeout closes kept-alive connections without traffic.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxRequestBytes is the largest request body accepted; a larger one
	// is answered 413 before it is decoded.
	MaxRequestBytes int64
	// CertsReady, when set, is closed once CertDir holds a certificate
	// (self-managed certificates are written after the server is created);
	// Start waits for it.
	CertsReady <-chan struct{}
}

// Defaults of ServerOptions.
const (
	DefaultCertPollInterval = 10 * time.Second
	DefaultReadTimeout      = 10 * time.Second
	DefaultWriteTimeout     = 10 * time.Second
	DefaultIdleTimeout      = 90 * time.Second
	// DefaultMaxRequestBytes fits the AdmissionReview of a pod CREATE: one
	// object of at most 3 MiB (the API server's limit for a JSON write)
	// plus the review's own fields.
	DefaultMaxRequestBytes = 4 << 20
	shutdownTimeout        = 30 * time.Second
)

func (o *ServerOptions) setDefaults() {
	o.CertName = cmp.Or(o.CertName, "tls.crt")
	o.KeyName = cmp.Or(o.KeyName, "tls.key")
	if o.CertPollInterval <= 0 {
		o.CertPollInterval = DefaultCertPollInterval
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
}

// Server serves admission webhooks over HTTPS with bounded request sizes
// and timeouts; controller-runtime's own webhook server sets no read or
// write timeout, so a stalled client could hold a connection forever.
// Server is a manager.Runnable.
type Server struct {
	opts    ServerOptions
	handler http.Handler

	mu        sync.Mutex
	addr      net.Addr
	listening chan struct{}
}

// NewServer returns a server of routes (path to handler).
func NewServer(opts ServerOptions, routes map[string]http.Handler) *Server {
	opts.setDefaults()
	mux := http.NewServeMux()
	for path, h := range routes {
		mux.Handle(path, boundRequest(opts.MaxRequestBytes, opts.WriteTimeout, h))
	}
	return &Server{opts: opts, handler: mux, listening: make(chan struct{})}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica serves.
func (s *Server) NeedLeaderElection() bool { return false }

// Listening is closed once the server accepts connections.
func (s *Server) Listening() <-chan struct{} { return s.listening }

// Addr is the address the server listens on, nil before Listening.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Start loads the certificate, listens and serves until ctx ends, then
// drains in-flight requests.
func (s *Server) Start(ctx context.Context) error {
	if s.opts.CertsReady != nil {
		select {
		case <-s.opts.CertsReady:
		case <-ctx.Done():
			return nil
		}
	}
	certPath := filepath.Join(s.opts.CertDir, s.opts.CertName)
	keyPath := filepath.Join(s.opts.CertDir, s.opts.KeyName)
	watcher, err := certwatcher.New(certPath, keyPath)
	if err != nil {
		return fmt.Errorf("load serving certificate: %w", err)
	}
	watcher = watcher.WithWatchInterval(s.opts.CertPollInterval)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		if err := watcher.Start(watchCtx); err != nil {
			klog.ErrorS(err, "Certificate watcher stopped; the serving certificate is no longer reloaded")
		}
	}()

	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.opts.Addr, err)
	}
	tlsConfig := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: watcher.GetCertificate,
		// HTTP/1.1 only: the API server speaks it to webhooks, and it
		// keeps HTTP/2's stream-level attacks (rapid reset) off the table.
		NextProtos: []string{"http/1.1"},
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.opts.ReadTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		WriteTimeout:      s.opts.WriteTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    1 << 20,
		// Handshake failures and timeouts of misbehaving clients.
		ErrorLog: klog.NewStandardLogger("WARNING"),
	}
	s.mu.Lock()
	s.addr = ln.Addr()
	s.mu.Unlock()
	close(s.listening)
	klog.InfoS("Serving admission webhook", "address", ln.Addr().String())

	drained := make(chan struct{})
	go func() {
		defer close(drained)
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			klog.ErrorS(err, "Webhook server did not shut down cleanly")
		}
	}()
	if err := srv.Serve(tls.NewListener(ln, tlsConfig)); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-drained
	return nil
}

// ReadyCheck is a healthz.Checker: ready once the server listens and
// completes a TLS handshake with its current certificate.
func (s *Server) ReadyCheck(req *http.Request) error {
	addr := s.Addr()
	if addr == nil {
		return errors.New("webhook server is not listening yet")
	}
	dialer := &tls.Dialer{
		NetDialer: &net.Dialer{Timeout: 2 * time.Second},
		// Only the server's own liveness is checked here, not its identity.
		Config: &tls.Config{InsecureSkipVerify: true},
	}
	conn, err := dialer.DialContext(req.Context(), "tcp", addr.String())
	if err != nil {
		return fmt.Errorf("webhook server does not complete a TLS handshake: %w", err)
	}
	return conn.Close()
}

// boundRequest admits only POST bodies of at most limit bytes, read in full
// before next sees them (so next cannot stall on a slow body), and gives
// next a context that ends after timeout.
func boundRequest(limit int64, timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "admission reviews are POSTed; method "+r.Method+" is not allowed", http.StatusMethodNotAllowed)
			return
		}
		tooLarge := "request body is larger than " + strconv.FormatInt(limit, 10) + " bytes; an AdmissionReview of a pod never is"
		if r.ContentLength > limit {
			// Read (and drop) a bounded part of the body first: a client
			// still writing when the answer comes would otherwise see the
			// connection reset instead of the 413.
			_, _ = io.CopyN(io.Discard, r.Body, 2*limit)
			http.Error(w, tooLarge, http.StatusRequestEntityTooLarge)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			http.Error(w, "request body cannot be read: "+err.Error(), http.StatusBadRequest)
			return
		}
		if int64(len(body)) > limit {
			http.Error(w, tooLarge, http.StatusRequestEntityTooLarge)
			return
		}
		if len(body) == 0 {
			r.Body = http.NoBody
		} else {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		r.ContentLength = int64(len(body))
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
