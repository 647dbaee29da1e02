package webhook

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Values of the result label of hami_webhook_admissions_total.
const (
	// resultMutated: a pod was admitted with a patch (a device pod, or a
	// pod that only got a vendor's env, e.g. overwriteEnv).
	resultMutated = "mutated"
	// resultUntouched: admitted unchanged (another scheduler, the ignore
	// label, no managed resource and nothing to add, not a CREATE).
	resultUntouched = "untouched"
	// resultInvalid, resultPrivileged, resultNodeName, resultQuota: the
	// rule that refused the pod.
	resultInvalid    = "refused_invalid"
	resultPrivileged = "refused_privileged"
	resultNodeName   = "refused_node_name"
	resultQuota      = "refused_quota"
	// resultUnservable: a request the vendor's device plugin cannot serve
	// (devices.UnservableError).
	resultUnservable = "refused_unservable"
	// resultBadRequest: the review was not a pod CREATE that decodes.
	resultBadRequest = "bad_request"
	// resultError: the webhook could not decide (quota unreadable).
	resultError = "error"
)

// admissionsTotal counts admission decisions by result. It complements
// controller-runtime's controller_runtime_webhook_* request metrics, which
// cannot tell a refusal from an admission.
var admissionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "hami_webhook_admissions_total",
	Help: "Pod admission decisions of hami-webhook, by result.",
}, []string{"result"})

func init() {
	metrics.Registry.MustRegister(admissionsTotal)
}
