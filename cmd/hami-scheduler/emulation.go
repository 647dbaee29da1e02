package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/hami-scheduler/hami-scheduler/internal/kubeversion"
)

// emulatedVersionFlag is kube-scheduler's flag (1.31 and later) that makes
// it behave, feature gates and informers included, as an older minor.
const emulatedVersionFlag = "emulated-version"

// serverVersionTimeout bounds how long the start waits for the API server
// to answer /version (it retries while the server is unreachable).
var serverVersionTimeout = 60 * time.Second

// withServerEmulation asks the API server for its version before the
// scheduler sets its feature gates (cmd's own PersistentPreRunE) and,
// unless the operator set --emulated-version, emulates the server's minor,
// so that the scheduler starts no informer for an API the server lacks (a
// list answered with 404 never syncs, and kube-scheduler waits for every
// informer before it schedules). An API server the build does not serve
// is refused here, with the builds that do, rather than left to hang.
func withServerEmulation(cmd *cobra.Command) *cobra.Command {
	preRunE := cmd.PersistentPreRunE
	cmd.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if !onlyPrints(c) {
			if err := emulateServer(c); err != nil {
				return err
			}
		}
		if preRunE != nil {
			return preRunE(c, args)
		}
		return nil
	}
	return cmd
}

// onlyPrints reports whether the command will only print and exit
// (--version, --write-config-to), which needs no API server.
func onlyPrints(c *cobra.Command) bool {
	if f := c.Flags().Lookup("version"); f != nil && f.Value.String() != "false" {
		return true
	}
	if f := c.Flags().Lookup("write-config-to"); f != nil && f.Value.String() != "" {
		return true
	}
	return false
}

// emulateServer reads the API server's version and checks it against this
// build's range; it sets --emulated-version when the build can emulate
// and the operator did not set it.
func emulateServer(c *cobra.Command) error {
	logger := klog.Background()
	binary, err := kubeversion.BinaryMinor()
	if err != nil {
		return err
	}
	config, err := schedulerKubeConfig(c)
	if err != nil {
		// kube-scheduler reports a bad --config or kubeconfig itself,
		// with its own wording; nothing to emulate without a server.
		logger.V(2).Info("Not reading the API server's version", "err", err)
		return nil
	}
	server, err := serverVersion(c.Context(), config)
	if err != nil {
		return err
	}
	emulation, err := kubeversion.Choose(binary, server, kubeversion.Release)
	if err != nil {
		return err
	}
	flag := c.Flags().Lookup(emulatedVersionFlag)
	switch {
	case flag == nil:
		// Below 1.31: no emulation, the range is the binary's own minor
		// and the next.
		logger.Info("API server version checked", "server", server, "kubeScheduler", fmt.Sprintf("1.%d", binary))
		return nil
	case flag.Changed:
		logger.Info("Emulated version set by flag; not emulating the API server's", "server", server, emulatedVersionFlag, flag.Value.String())
		return nil
	}
	// Set even when it is the binary's own minor: the value is then the
	// default, and explicit in the flags the scheduler logs.
	value := fmt.Sprintf("kube=1.%d", emulation.Minor)
	if err := c.Flags().Set(emulatedVersionFlag, value); err != nil {
		return fmt.Errorf("--%s=%s: %w", emulatedVersionFlag, value, err)
	}
	// Set marks the flag changed; the operator did not.
	flag.Changed = false
	logger.Info("Emulating the API server's Kubernetes minor", "server", server, "kubeScheduler", fmt.Sprintf("1.%d", binary), emulatedVersionFlag, value)
	return nil
}

// schedulerKubeConfig is the client configuration kube-scheduler will use:
// the kubeconfig of the --config file's clientConnection (or of the
// deprecated --kubeconfig without --config), --master overriding its
// server, in-cluster credentials when neither is set.
func schedulerKubeConfig(c *cobra.Command) (*rest.Config, error) {
	kubeconfig := flagValue(c, "kubeconfig")
	if file := flagValue(c, "config"); file != "" {
		cfg, err := options.LoadConfigFromFile(klog.Background(), file)
		if err != nil {
			return nil, err
		}
		kubeconfig = cfg.ClientConnection.Kubeconfig
	}
	return clientcmd.BuildConfigFromFlags(flagValue(c, "master"), kubeconfig)
}

func flagValue(c *cobra.Command, name string) string {
	if f := c.Flags().Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// serverVersion asks the API server for its version, retrying while it
// does not answer, for at most serverVersionTimeout.
func serverVersion(ctx context.Context, config *rest.Config) (string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	config = rest.CopyConfig(config)
	config.Timeout = 10 * time.Second
	client, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return "", fmt.Errorf("API server version: %w", err)
	}
	var (
		got     string
		lastErr error
	)
	err = wait.PollUntilContextTimeout(ctx, time.Second, serverVersionTimeout, true, func(context.Context) (bool, error) {
		info, err := client.ServerVersion()
		if err != nil {
			lastErr = err
			klog.Background().V(2).Info("API server version not read yet", "err", err)
			return false, nil
		}
		got = info.GitVersion
		return true, nil
	})
	if err != nil {
		if lastErr != nil {
			err = lastErr
		}
		return "", fmt.Errorf("reading the API server's version at %s: %w", config.Host, err)
	}
	return got, nil
}
