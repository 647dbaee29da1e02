package release

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// proxy stands for the webhook's Service: it forwards each TCP connection
// (TLS passes through) to the first replica that accepts it, so that the
// API server reaches a live replica while another is down.
type proxy struct {
	ln       net.Listener
	mu       sync.Mutex
	backends []string
	done     sync.WaitGroup
}

func startProxy() (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln}
	p.done.Go(p.serve)
	return p, nil
}

// url is the proxy's https URL with the path, under the name localhost,
// which the webhook's certificate carries here.
func (p *proxy) url(path string) string {
	return fmt.Sprintf("https://localhost:%d%s", p.ln.Addr().(*net.TCPAddr).Port, path)
}

// setBackends replaces the replicas' addresses.
func (p *proxy) setBackends(addrs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backends = append([]string(nil), addrs...)
}

func (p *proxy) serve() {
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.done.Go(func() { p.forward(conn) })
	}
}

func (p *proxy) forward(conn net.Conn) {
	defer conn.Close()
	p.mu.Lock()
	backends := append([]string(nil), p.backends...)
	p.mu.Unlock()
	for _, addr := range backends {
		up, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			continue
		}
		defer up.Close()
		var copies sync.WaitGroup
		copies.Go(func() { _, _ = io.Copy(up, conn); _ = up.(*net.TCPConn).CloseWrite() })
		_, _ = io.Copy(conn, up)
		_ = conn.(*net.TCPConn).CloseWrite()
		copies.Wait()
		return
	}
}

func (p *proxy) close() {
	_ = p.ln.Close()
}
