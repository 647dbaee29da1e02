// Package devices is the domain of hami-scheduler: physical cards, what a
// container asks of them, how a request is fitted onto a node's cards and how
// the result is written to and read from HAMi's node and pod annotations.
//
// Everything here is a pure function of its inputs (Kubernetes API objects
// in, decisions and annotation strings out): no client, no informer, no
// goroutine. Each vendor lives in its own sub-package and implements Vendor.
package devices
