package localcluster

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/hami-scheduler/hami-scheduler/manifests"
)

// InstallPodGroupCRD creates the shipped CustomResourceDefinition of
// scheduler-plugins' PodGroup (manifests/podgroup-crd.yaml), unless the
// API server has one, and waits until it is served. Start schedulers after
// it, as a cluster installs the chart's CRD before hami-scheduler runs.
func InstallPodGroupCRD(ctx context.Context, cfg *rest.Config) error {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(manifests.PodGroupCRDYAML, &crd); err != nil {
		return fmt.Errorf("manifests/podgroup-crd.yaml: %w", err)
	}
	return CreateCRD(ctx, cfg, &crd)
}

// CreateCRD creates the CustomResourceDefinition, unless the API server
// has one of its name, and waits until it is served.
func CreateCRD(ctx context.Context, cfg *rest.Config, crd *apiextensionsv1.CustomResourceDefinition) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CRD %s: %w", crd.Name, err)
	}
	return WaitCRDEstablished(ctx, cfg, crd.Name)
}

// WaitCRDEstablished waits, up to a minute, until the API server serves
// the CustomResourceDefinition's resource (condition Established).
func WaitCRDEstablished(ctx context.Context, cfg *rest.Config, name string) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established: %w", name, err)
	}
	return nil
}
