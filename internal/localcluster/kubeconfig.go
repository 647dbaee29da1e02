package localcluster

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ContextName is the kubeconfig context WriteKubeconfig writes.
const ContextName = "hami-local"

// WriteKubeconfig writes a kubeconfig (mode 0600) that reaches the
// apiserver from this machine with the control plane's administrator
// credentials, e.g. for kubectl.
func (cp *ControlPlane) WriteKubeconfig(path string) error {
	c := cp.Config
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ContextName] = &clientcmdapi.Cluster{
		Server:                   c.Host,
		CertificateAuthorityData: c.CAData,
		TLSServerName:            c.ServerName,
		InsecureSkipTLSVerify:    c.Insecure,
	}
	cfg.AuthInfos[ContextName] = &clientcmdapi.AuthInfo{
		Token:                 c.BearerToken,
		ClientCertificateData: c.CertData,
		ClientKeyData:         c.KeyData,
	}
	cfg.Contexts[ContextName] = &clientcmdapi.Context{Cluster: ContextName, AuthInfo: ContextName, Namespace: "default"}
	cfg.CurrentContext = ContextName
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	// Written aside and renamed, so that whoever waits for the file never
	// reads half of it.
	tmp := path + ".tmp"
	if err := clientcmd.WriteToFile(*cfg, tmp); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}
