package kubeversion

import (
	"errors"
	"strings"
	"testing"
)

func TestBandRange(t *testing.T) {
	tests := []struct {
		minor          int
		oldest, newest int
	}{
		{minor: 37, oldest: 34, newest: 38},
		{minor: 34, oldest: 31, newest: 35},
		{minor: 33, oldest: 31, newest: 34},
		{minor: 32, oldest: 31, newest: 33},
		{minor: 31, oldest: 31, newest: 32},
		{minor: 30, oldest: 30, newest: 31},
		{minor: 28, oldest: 28, newest: 29},
	}
	for _, tt := range tests {
		b := Band{Minor: tt.minor}
		if b.Oldest() != tt.oldest || b.Newest() != tt.newest {
			t.Errorf("1.%d serves 1.%d to 1.%d, want 1.%d to 1.%d", tt.minor, b.Oldest(), b.Newest(), tt.oldest, tt.newest)
		}
	}
}

// TestBandsCoverWithoutGaps: the shipped bands, newest first, serve one
// contiguous range of minors.
func TestBandsCoverWithoutGaps(t *testing.T) {
	for i := 1; i < len(Bands); i++ {
		newer, older := Bands[i-1], Bands[i]
		if older.Minor >= newer.Minor {
			t.Errorf("Bands[%d] 1.%d is not older than Bands[%d] 1.%d", i, older.Minor, i-1, newer.Minor)
		}
		if older.Newest() < newer.Oldest()-1 {
			t.Errorf("no band serves 1.%d to 1.%d", older.Newest()+1, newer.Oldest()-1)
		}
	}
}

func TestChoose(t *testing.T) {
	tests := []struct {
		name    string
		binary  int
		server  string
		want    int
		wantErr []string
	}{
		{name: "same minor", binary: 37, server: "v1.37.2", want: 37},
		{name: "one older emulated", binary: 37, server: "v1.36.3", want: 36},
		{name: "oldest emulated", binary: 37, server: "v1.34.4", want: 34},
		{name: "managed cluster suffix", binary: 37, server: "v1.35.4-gke.1200", want: 35},
		{name: "server one newer runs as the binary", binary: 37, server: "v1.38.0", want: 37},
		{name: "server of an older band", binary: 37, server: "v1.33.6", wantErr: []string{
			"the API server is Kubernetes v1.33.6, and this hami-scheduler (kube-scheduler 1.37) serves API servers 1.34 to 1.38 only",
			"run the build for Kubernetes 1.33 (image tag 1.2.3-k8s1.33, or make build K8S_MINOR=1.33)",
		}},
		{name: "1.33 band emulates 1.31", binary: 33, server: "v1.31.14", want: 31},
		{name: "1.33 band on a 1.34 server runs as 1.33", binary: 33, server: "v1.34.4", want: 33},
		{name: "1.33 band on a 1.30 server names the 1.30 band", binary: 33, server: "v1.30.14", wantErr: []string{
			"serves API servers 1.31 to 1.34 only",
			"run the build for Kubernetes 1.30 (image tag 1.2.3-k8s1.30, or make build K8S_MINOR=1.30)",
		}},
		{name: "1.30 band, no emulation", binary: 30, server: "v1.30.14", want: 30},
		{name: "1.30 band on a 1.31 server", binary: 30, server: "v1.31.14", want: 30},
		{name: "1.30 band on a 1.28 server, tested below the skew policy", binary: 30, server: "v1.28.15", want: 30},
		{name: "server older than every band", binary: 30, server: "v1.27.16", wantErr: []string{
			"serves API servers 1.28 to 1.31 only",
			"no build of hami-scheduler serves Kubernetes 1.27; the builds serve 1.28 to 1.38",
		}},
		{name: "an unshipped 1.29 build serves its own minor and the next", binary: 29, server: "v1.28.15", wantErr: []string{"serves API servers 1.29 to 1.30 only"}},
		{name: "server too new", binary: 37, server: "v1.39.1", wantErr: []string{"serves API servers 1.34 to 1.38 only"}},
		{name: "old build on a newer server: the shipped band is named", binary: 33, server: "v1.36.3", wantErr: []string{
			"serves API servers 1.31 to 1.34 only",
			"run the build for Kubernetes 1.37 (image tag 1.2.3-k8s1.37, or make build K8S_MINOR=1.37)",
		}},
		{name: "major 2", binary: 37, server: "v2.0.0", wantErr: []string{"serves API servers 1.34 to 1.38 only"}},
		{name: "unreadable", binary: 37, server: "master", wantErr: []string{`the API server reports version "master"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Choose(tt.binary, tt.server, "1.2.3")
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Choose: %v", err)
				}
				if got.Minor != tt.want || got.Server != tt.server {
					t.Fatalf("Choose = %+v, want minor %d of %s", got, tt.want, tt.server)
				}
				return
			}
			if err == nil {
				t.Fatalf("Choose = %+v, want an error", got)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			var unserved *UnservedError
			if tt.server != "master" && !errors.As(err, &unserved) {
				t.Errorf("error %T is not an *UnservedError", err)
			}
		})
	}
}

// TestMinorOf reads module versions; cmd/hami-scheduler's tests check
// BinaryMinor on a binary that links k8s.io/kubernetes.
func TestMinorOf(t *testing.T) {
	tests := []struct {
		version string
		want    int
		wantErr bool
	}{
		{version: "v1.37.2", want: 37},
		{version: "v1.28.15", want: 28},
		{version: "v1.38.0-beta.0", want: 38},
		{version: "v0.0.0", wantErr: true},
		{version: "(devel)", wantErr: true},
	}
	for _, tt := range tests {
		got, err := minorOf(tt.version)
		if (err != nil) != tt.wantErr || got != tt.want && !tt.wantErr {
			t.Errorf("minorOf(%q) = %d, %v; want %d, error %v", tt.version, got, err, tt.want, tt.wantErr)
		}
	}
}
