package release

import (
	"context"
	"fmt"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// serviceAccountKubeconfig writes, in dir, a kubeconfig for the API server
// holding a token of the ServiceAccount (TokenRequest, as the kubelet
// gets the projected one), and returns its path.
func (r *Release) serviceAccountKubeconfig(ctx context.Context, namespace, name, dir string) (string, error) {
	tr, err := r.cp.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3 * 3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token of service account %s/%s: %w", namespace, name, err)
	}
	c := r.cp.Config
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["release"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData, TLSServerName: c.ServerName, InsecureSkipTLSVerify: c.Insecure}
	cfg.AuthInfos["release"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["release"] = &clientcmdapi.Context{Cluster: "release", AuthInfo: "release", Namespace: namespace}
	cfg.CurrentContext = "release"
	path := filepath.Join(dir, "kubeconfig-"+name)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", err
	}
	return path, nil
}
