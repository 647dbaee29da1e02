package localcluster

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// InstallDeviceClasses creates the DeviceClasses, as the DRA drivers'
// charts install them (simnode.DeviceClasses gives those of a cluster's
// node groups); one that exists already is left as it is.
func InstallDeviceClasses(ctx context.Context, cfg *rest.Config, classes []*resourceapi.DeviceClass) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, c := range classes {
		_, err := client.ResourceV1().DeviceClasses().Create(ctx, c, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create DeviceClass %s: %w", c.Name, err)
		}
	}
	return nil
}
