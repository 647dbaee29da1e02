package localcluster

import (
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
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

// The in-process API server and schedulers run with what DRA nodes need
// on (1.37's defaults, which the shipped gates leave alone): DRA itself,
// consumable capacity (shareable devices, capacity requests) and
// extended resources backed by DRA.
func TestDRAFeatureGates(t *testing.T) {
	if err := applyShippedFeatureGates(); err != nil {
		t.Fatal(err)
	}
	for _, gate := range []featuregate.Feature{features.DynamicResourceAllocation, features.DRAConsumableCapacity, features.DRAExtendedResource} {
		if !utilfeature.DefaultFeatureGate.Enabled(gate) {
			t.Errorf("%s is off in this process", gate)
		}
	}
}
