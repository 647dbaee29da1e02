// Command hami-scheduler is kube-scheduler with HAMi's device-sharing
// plugin compiled in. Every kube-scheduler flag and KubeSchedulerConfiguration
// works unchanged; enable the plugin in a profile (see manifests/).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/hami-scheduler/hami-scheduler/plugins"
)

func main() {
	command := app.NewSchedulerCommand(app.WithPlugin(plugins.Name, plugins.New))
	os.Exit(cli.Run(command))
}
