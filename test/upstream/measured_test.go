//go:build upstream

package upstream

import (
	"fmt"
	"sync"
)

// measured holds one figure per workload (workloadOf's key) and variant,
// recorded by the suite's hooks as workloads end and read by printFigures.
type measured struct {
	mu     sync.Mutex
	values map[string]map[variant]float64
}

// set records the figure of the workload named by its test name.
func (m *measured) set(testName string, value float64) {
	key, v := workloadOf(testName)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.values == nil {
		m.values = map[string]map[variant]float64{}
	}
	if m.values[key] == nil {
		m.values[key] = map[variant]float64{}
	}
	m.values[key][v] = value
}

// cell is the workload's figure in the variant times scale, formatted
// with format, or "-" when not measured.
func (m *measured) cell(key string, v variant, scale float64, format string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	value, ok := m.values[key][v]
	if !ok {
		return "-"
	}
	return fmt.Sprintf(format, scale*value)
}
