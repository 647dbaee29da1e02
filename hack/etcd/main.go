// Command etcd is etcd's own server (go.etcd.io/etcd/server/v3's etcdmain),
// built from the module go.mod pins, for kube-scheduler's scheduler_perf
// suite (make bench-upstream), which runs an etcd binary from PATH.
// Nothing prebuilt is downloaded.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
