package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kube-scheduler/framework"
	_ "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	_ "k8s.io/kubernetes/pkg/scheduler/framework"
	_ "k8s.io/apiserver/pkg/storage/etcd3/testserver"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	_ "sigs.k8s.io/controller-runtime/pkg/webhook"
)

func main() {
	command := app.NewSchedulerCommand()
	os.Exit(cli.Run(command))
}
