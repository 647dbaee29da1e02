package localcluster

import (
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/features"
)

// TestShippedFeatureGates: the Deployment turns off the nominatedNodeName
// write before PreBind, and the in-process schedulers follow it.
func TestShippedFeatureGates(t *testing.T) {
	gates, err := ShippedFeatureGates()
	if err != nil {
		t.Fatal(err)
	}
	if gates != "NominatedNodeNameForExpectation=false" {
		t.Errorf("--feature-gates=%q", gates)
	}
	if err := applyShippedFeatureGates(); err != nil {
		t.Fatal(err)
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.NominatedNodeNameForExpectation) {
		t.Error("NominatedNodeNameForExpectation still on in this process")
	}
}
