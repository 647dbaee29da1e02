package allocation

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ListDRA lists what ReadCluster reads of DRA: every ResourceSlice and
// every ResourceClaim of the cluster, in a Cluster whose other fields the
// caller fills. An API server that serves no
// resource.k8s.io/v1 (Kubernetes before 1.34) has none: no error, no
// warning. Slices or claims the client may not list (RBAC) give a warning
// saying what is then missing, and none.
func ListDRA(ctx context.Context, client kubernetes.Interface) (Cluster, []string, error) {
	var c Cluster
	var warnings []string
	slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return c, nil, nil
	case apierrors.IsForbidden(err):
		warnings = append(warnings, "ResourceSlices (resource.k8s.io) cannot be listed: the cards DRA drivers publish are not shown")
	case err != nil:
		return c, nil, fmt.Errorf("listing ResourceSlices: %w", err)
	default:
		c.Slices = slices.Items
	}
	claims, err := client.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case apierrors.IsForbidden(err):
		warnings = append(warnings, "ResourceClaims (resource.k8s.io) cannot be listed in all namespaces: what claims take of DRA cards is not counted")
	case err != nil:
		return c, nil, fmt.Errorf("listing ResourceClaims: %w", err)
	default:
		c.Claims = claims.Items
	}
	return c, warnings, nil
}
