package allocation

import (
	"errors"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hami-scheduler/hami-scheduler/devices/dra"
)

func TestListDRA(t *testing.T) {
	s := nodeSlice(dra.HAMiCore, "dra-0", draDevice(dra.HAMiCore, 0, "GPU-h0", 40*gib, true))
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	group := schema.GroupResource{Group: resourceapi.GroupName, Resource: "resourceslices"}
	tests := []struct {
		name string
		// fail makes listing the resource fail with the error.
		fail         map[string]error
		wantSlices   int
		wantClaims   int
		wantWarnings []string
		wantErr      string
	}{
		{name: "both listed", wantSlices: 1, wantClaims: 1},
		{name: "resource.k8s.io/v1 not served: none, silently",
			fail: map[string]error{"resourceslices": apierrors.NewNotFound(group, ""), "resourceclaims": apierrors.NewNotFound(group, "")}},
		{name: "slices forbidden: a warning, the claims still",
			fail:         map[string]error{"resourceslices": apierrors.NewForbidden(group, "", errors.New("RBAC"))},
			wantClaims:   1,
			wantWarnings: []string{"ResourceSlices (resource.k8s.io) cannot be listed"}},
		{name: "claims forbidden: a warning, the slices still",
			fail:         map[string]error{"resourceclaims": apierrors.NewForbidden(group, "", errors.New("RBAC"))},
			wantSlices:   1,
			wantWarnings: []string{"ResourceClaims (resource.k8s.io) cannot be listed in all namespaces"}},
		{name: "any other failure is an error",
			fail:    map[string]error{"resourceclaims": apierrors.NewInternalError(errors.New("etcd"))},
			wantErr: "listing ResourceClaims"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(&s, claim)
			for resource, err := range tt.fail {
				client.PrependReactor("list", resource, func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err })
			}
			got, warnings, err := ListDRA(t.Context(), client)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Slices) != tt.wantSlices || len(got.Claims) != tt.wantClaims {
				t.Errorf("%d slices, %d claims; want %d, %d", len(got.Slices), len(got.Claims), tt.wantSlices, tt.wantClaims)
			}
			if len(warnings) != len(tt.wantWarnings) {
				t.Fatalf("warnings %q, want %q", warnings, tt.wantWarnings)
			}
			for i, w := range tt.wantWarnings {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %q, want it to say %q", warnings[i], w)
				}
			}
		})
	}
}
