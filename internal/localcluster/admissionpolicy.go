package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/hami-scheduler/hami-scheduler/manifests"
)

// ApplyAdmissionPolicy creates the objects of the shipped
// manifests/admission-policy.yaml (the ValidatingAdmissionPolicy that
// guards HAMi's annotations, and its binding). remove deletes what it
// created. The API server must serve admissionregistration.k8s.io/v1
// policies (1.30 and later).
func ApplyAdmissionPolicy(ctx context.Context, client kubernetes.Interface) (remove func(), err error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifests.AdmissionPolicyYAML)))
	api := client.AdmissionregistrationV1()
	var created []func()
	remove = func() {
		for _, del := range created {
			del()
		}
	}
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return remove, nil
		}
		if err != nil {
			return remove, fmt.Errorf("manifests/admission-policy.yaml: %w", err)
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return remove, fmt.Errorf("decode manifests/admission-policy.yaml: %w", err)
		}
		switch o := obj.(type) {
		case *admissionv1.ValidatingAdmissionPolicy:
			_, err = api.ValidatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{})
			created = append(created, func() {
				_ = api.ValidatingAdmissionPolicies().Delete(context.Background(), o.Name, metav1.DeleteOptions{})
			})
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			_, err = api.ValidatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{})
			created = append(created, func() {
				_ = api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), o.Name, metav1.DeleteOptions{})
			})
		default:
			return remove, fmt.Errorf("manifests/admission-policy.yaml: unexpected %T", obj)
		}
		if err != nil {
			return remove, fmt.Errorf("create %T from manifests/admission-policy.yaml: %w", obj, err)
		}
	}
}
