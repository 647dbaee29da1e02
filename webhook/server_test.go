package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// testServer is a running Server on 127.0.0.1 serving the real HTTP
// handler (no quota reader).
type testServer struct {
	*Server
	cert testCert
	dir  string
}

func startTestServer(t testing.TB, opts ServerOptions) *testServer {
	t.Helper()
	dir := t.TempDir()
	cert := newTestCert(t, 1)
	cert.write(t, dir)
	hook, err := NewHTTPHandler(testConfig(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.Addr = "127.0.0.1:0"
	opts.CertDir = dir
	srv := NewServer(opts, map[string]http.Handler{MutatePath: hook})
	if err := srv.ReadyCheck(httpRequest(t)); err == nil {
		t.Error("ready before it was started")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server stopped with %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("server did not stop within a minute")
		}
	})
	select {
	case <-srv.Listening():
	case err := <-done:
		t.Fatalf("server failed to start: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("server did not listen within 30s")
	}
	return &testServer{Server: srv, cert: cert, dir: dir}
}

func httpRequest(t testing.TB) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, "/readyz", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (s *testServer) url(path string) string { return "https://" + s.Addr().String() + path }

func clientTrusting(c testCert) *http.Client {
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: c.trusting(), DisableKeepAlives: true},
	}
}

func review(t *testing.T, req *admissionv1.AdmissionRequest) []byte {
	t.Helper()
	return mustJSON(t, admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
}

func podReview(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	r := createRequest(t, obj)
	return review(t, &r.AdmissionRequest)
}

// TestServerBadInput sends well- and ill-formed requests to the real
// server over TLS: every one gets a clear 4xx, or a review that refuses
// with a 4xx code, and the server keeps serving.
func TestServerBadInput(t *testing.T) {
	const limit = 64 << 10
	s := startTestServer(t, ServerOptions{MaxRequestBytes: limit})
	client := clientTrusting(s.cert)
	if err := s.ReadyCheck(httpRequest(t)); err != nil {
		t.Fatalf("not ready while listening: %v", err)
	}
	deployment := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}}
	wrongKind := createRequest(t, deployment)
	wrongKind.Kind = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        func() io.Reader
		// status is the HTTP status; for 200 the review's result follows.
		status      int
		allowed     bool
		reviewCode  int32
		message     string
		wantPatched bool
	}{
		{
			name: "device pod is patched", body: bytesOf(podReview(t, newPod(limits("nvidia.com/gpumem", "1000")))),
			status: 200, allowed: true, reviewCode: 200, wantPatched: true,
		},
		{
			name: "pod without devices is allowed unchanged", body: bytesOf(podReview(t, newPod())),
			status: 200, allowed: true, reviewCode: 200,
		},
		{
			name: "GET", method: http.MethodGet,
			status: http.StatusMethodNotAllowed, message: "POSTed",
		},
		{
			name: "unknown path", path: "/validate",
			body:   bytesOf(podReview(t, newPod())),
			status: http.StatusNotFound,
		},
		{
			name:   "oversized body with a length",
			body:   bytesOf(bytes.Repeat([]byte("x"), limit+1)),
			status: http.StatusRequestEntityTooLarge, message: "larger than 65536 bytes",
		},
		{
			name: "oversized chunked body",
			body: func() io.Reader {
				// A reader of unknown length makes the client send chunks.
				return io.MultiReader(strings.NewReader(`{"request":`), bytes.NewReader(bytes.Repeat([]byte(" "), 2*limit)))
			},
			status: http.StatusRequestEntityTooLarge, message: "larger than 65536 bytes",
		},
		{
			name: "empty body", body: bytesOf(nil),
			status: 200, reviewCode: http.StatusBadRequest, message: "request body is empty",
		},
		{
			name: "not JSON", body: bytesOf([]byte("{{{{")),
			status: 200, reviewCode: http.StatusBadRequest,
		},
		{
			name: "wrong content type", contentType: "text/plain", body: bytesOf(podReview(t, newPod())),
			status: 200, reviewCode: http.StatusBadRequest, message: "expected application/json",
		},
		{
			name: "review without a request", body: bytesOf([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`)),
			status: 200, reviewCode: http.StatusBadRequest, message: "admits pods only",
		},
		{
			name: "review of another kind", body: bytesOf(review(t, &wrongKind.AdmissionRequest)),
			status: 200, reviewCode: http.StatusBadRequest, message: "admits pods only",
		},
		{
			name: "pod that is not an object", body: bytesOf(func() []byte {
				r := createRequest(t, newPod())
				r.Object.Raw = []byte(`["not","a","pod"]`)
				return review(t, &r.AdmissionRequest)
			}()),
			status: 200, reviewCode: http.StatusBadRequest, message: "cannot be decoded",
		},
		{
			name: "pod with no containers", body: bytesOf(podReview(t, newPod(noContainers()))),
			status: 200, reviewCode: http.StatusForbidden, message: "pod has no containers",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, path, ct := tt.method, tt.path, tt.contentType
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = MutatePath
			}
			if ct == "" {
				ct = "application/json"
			}
			var body io.Reader
			if tt.body != nil {
				body = tt.body()
			}
			req, err := http.NewRequest(method, s.url(path), body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", ct)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Fatalf("HTTP %d %s, want %d", resp.StatusCode, data, tt.status)
			}
			if resp.StatusCode != http.StatusOK {
				if !strings.Contains(string(data), tt.message) {
					t.Errorf("body %q does not contain %q", data, tt.message)
				}
				return
			}
			var ar admissionv1.AdmissionReview
			if err := json.Unmarshal(data, &ar); err != nil || ar.Response == nil {
				t.Fatalf("answer is not an AdmissionReview with a response: %v: %s", err, data)
			}
			r := ar.Response
			if r.Allowed != tt.allowed || r.Result == nil || r.Result.Code != tt.reviewCode {
				t.Fatalf("review allowed=%v result=%+v, want allowed=%v code %d", r.Allowed, r.Result, tt.allowed, tt.reviewCode)
			}
			if !strings.Contains(r.Result.Message, tt.message) {
				t.Errorf("review message %q does not contain %q", r.Result.Message, tt.message)
			}
			if patched := len(r.Patch) > 0; patched != tt.wantPatched {
				t.Errorf("patched = %v (%s), want %v", patched, r.Patch, tt.wantPatched)
			}
			if tt.wantPatched && r.UID != "req-1" {
				t.Errorf("response UID %q does not echo the request's", r.UID)
			}
		})
	}
}

func bytesOf(b []byte) func() io.Reader {
	return func() io.Reader { return bytes.NewReader(b) }
}

// TestServerDropsStalledClients checks that a client that stops sending
// mid-request is cut off by the server's read timeout instead of holding
// the connection: the server answers or closes well before the client's
// own 30s deadline.
func TestServerDropsStalledClients(t *testing.T) {
	s := startTestServer(t, ServerOptions{ReadTimeout: 200 * time.Millisecond})
	tests := []struct {
		name    string
		partial string
	}{
		{name: "stalls in the headers", partial: "POST " + MutatePath + " HTTP/1.1\r\nHost: webhook\r\nContent-Ty"},
		{name: "stalls in the body", partial: "POST " + MutatePath + " HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"request\":"},
		{name: "stalls before the TLS handshake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var conn net.Conn
			var err error
			if tt.partial == "" {
				conn, err = net.Dial("tcp", s.Addr().String())
			} else {
				conn, err = tls.Dial("tcp", s.Addr().String(), s.cert.trusting())
			}
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tt.partial); err != nil {
				t.Fatal(err)
			}
			if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(conn)
			var netErr net.Error
			if errors.As(err, &netErr) && netErr.Timeout() {
				t.Fatalf("server kept the stalled connection open for 30s (read %q)", got)
			}
			if len(got) > 0 && !bytes.HasPrefix(got, []byte("HTTP/1.1 4")) && tt.partial != "" {
				t.Errorf("answer to a stalled request is not a 4xx: %q", got)
			}
		})
	}
}

// TestServerReloadsRotatedCertificate replaces the certificate files while
// the server runs and waits (bounded) until new TLS connections present
// the new certificate; a client trusting only the new one then gets its
// review answered, and one trusting only the old one is refused.
func TestServerReloadsRotatedCertificate(t *testing.T) {
	s := startTestServer(t, ServerOptions{CertPollInterval: 50 * time.Millisecond})
	old := s.cert
	if serial := servedSerial(t, s, old.trusting()); serial != 1 {
		t.Fatalf("serving serial %d before rotation, want 1", serial)
	}

	rotated := newTestCert(t, 2)
	rotated.write(t, s.dir)

	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := tls.Dial("tcp", s.Addr().String(), rotated.trusting())
		if err == nil {
			serial := conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
			conn.Close()
			if serial != 2 {
				t.Fatalf("handshake verified against the new certificate but served serial %d", serial)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("new certificate not served 30s after rotation: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	resp, err := clientTrusting(rotated).Post(s.url(MutatePath), "application/json",
		bytes.NewReader(podReview(t, newPod(limits("nvidia.com/gpumem", "1000")))))
	if err != nil {
		t.Fatalf("review over a connection with the new certificate: %v", err)
	}
	var ar admissionv1.AdmissionReview
	err = json.NewDecoder(resp.Body).Decode(&ar)
	resp.Body.Close()
	if err != nil || ar.Response == nil || !ar.Response.Allowed || len(ar.Response.Patch) == 0 {
		t.Fatalf("review after rotation: HTTP %d, %+v, %v", resp.StatusCode, ar.Response, err)
	}

	if _, err := tls.Dial("tcp", s.Addr().String(), old.trusting()); err == nil {
		t.Error("the old certificate is still served after rotation")
	}
}

func servedSerial(t *testing.T, s *testServer, cfg *tls.Config) int64 {
	t.Helper()
	conn, err := tls.Dial("tcp", s.Addr().String(), cfg)
	if err != nil {
		t.Fatal(fmt.Errorf("TLS handshake: %w", err))
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}
