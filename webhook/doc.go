// Package webhook is hami-scheduler's mutating admission webhook for pod
// CREATE. It applies HAMi's admission rules (hami-protocol section 5): each
// vendor's container defaulting (devices.Vendor.Default), the scheduler name,
// refusals for privileged device users and pre-bound pods, and the
// namespace's device ResourceQuota. It runs as its own binary
// (cmd/hami-webhook) on controller-runtime: an HTTPS server whose
// certificate is reloaded from disk, health probes and Prometheus metrics.
//
// Files by concern: config.go (what an operator sets), handler.go (the
// admission.Handler: decode, dispatch, patch), rules.go (the pod rules),
// demand.go (what a pod asks and what an admitted pod holds), quota.go (the
// ResourceQuota check), cache.go (what the informer cache keeps), server.go
// (the TLS server), metrics.go (the admissions counter), run.go (the
// controller-runtime manager).
package webhook
