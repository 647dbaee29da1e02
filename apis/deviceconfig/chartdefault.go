package deviceconfig

import _ "embed"

// ChartDefault is HAMi v2.10's chart-default device-config.yaml (the same
// bytes as test/testdata/device-config.yaml): every vendor HAMi supports,
// Ascend and Iluvatar once switched on (Options).
//
//go:embed chart-default.yaml
var ChartDefault []byte
