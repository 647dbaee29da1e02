// Package benchfigures is the machine-readable form of the end-to-end
// benchmark's figures (test/perf, make bench-e2e): what a run writes
// beside its tables (-results) and what make plots draws (hack/plots).
package benchfigures

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Arrivals of a phase, as test/perf names them.
const (
	Backlog = "backlog"
	Steady  = "steady"
)

// File is the figures of one run of the benchmark (one or several cluster
// sizes).
type File struct {
	// Title names the run in a plot's title, e.g. "make bench-scale,
	// 2026-12-02 (evening)".
	Title string `json:"title"`
	// Source says where the figures come from: a run of the benchmark,
	// which writes the file, or a transcription of a published table
	// (which table, from which run).
	Source string `json:"source"`
	// Command is the command that ran the benchmark.
	Command string `json:"command,omitempty"`
	// Date is when the run was, as its table says or RFC 3339.
	Date string `json:"date,omitempty"`
	// NodeSide describes the simulated nodes.
	NodeSide string  `json:"nodeSide,omitempty"`
	Phases   []Phase `json:"phases"`
}

// Phase is one phase of the run on one cluster size.
type Phase struct {
	// Nodes is the cluster's size; Pods the phase's pods.
	Nodes int `json:"nodes"`
	Pods  int `json:"pods"`
	// Name is the phase's name in the benchmark's tables, e.g. "hami
	// backlog binpack/q0".
	Name string `json:"name"`
	// Setting is HAMi's setting (e.g. "binpack/q0"); empty for the
	// baseline (whole-card pods, kube-scheduler's default profile).
	Setting string `json:"setting,omitempty"`
	// Arrival is Backlog or Steady; Rate the steady arrival rate, pods/s.
	Arrival string  `json:"arrival"`
	Rate    float64 `json:"rate,omitempty"`
	// PodsPerSecond is the pods/s to Running; WhileArriving, for steady
	// arrivals, the pods/s while the pods arrived.
	PodsPerSecond float64 `json:"podsPerSecond"`
	WhileArriving float64 `json:"whileArriving,omitempty"`
	// RunP50Seconds and RunP99Seconds are quantiles of the pods' time to
	// Running (from the scheduler's start for a backlog, from the pod's
	// creation for steady arrivals); 0: not recorded.
	RunP50Seconds float64 `json:"runP50Seconds,omitempty"`
	RunP99Seconds float64 `json:"runP99Seconds"`
	// CardsUsed and NodesUsed are the cards and nodes holding a pod.
	CardsUsed int `json:"cardsUsed,omitempty"`
	NodesUsed int `json:"nodesUsed,omitempty"`
}

// Validate reports every field of the file that cannot be drawn, with its
// path.
func (f *File) Validate() field.ErrorList {
	var errs field.ErrorList
	if f.Title == "" {
		errs = append(errs, field.Required(field.NewPath("title"), "names the run in plots"))
	}
	if f.Source == "" {
		errs = append(errs, field.Required(field.NewPath("source"), "says where the figures come from"))
	}
	if len(f.Phases) == 0 {
		errs = append(errs, field.Required(field.NewPath("phases"), ""))
	}
	for i, p := range f.Phases {
		errs = append(errs, p.validate(field.NewPath("phases").Index(i))...)
	}
	return errs
}

func (p Phase) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	positive := func(name string, v float64) {
		if v <= 0 {
			errs = append(errs, field.Invalid(path.Child(name), v, "must be positive"))
		}
	}
	nonNegative := func(name string, v float64) {
		if v < 0 {
			errs = append(errs, field.Invalid(path.Child(name), v, "must not be negative"))
		}
	}
	positive("nodes", float64(p.Nodes))
	positive("pods", float64(p.Pods))
	nonNegative("podsPerSecond", p.PodsPerSecond)
	nonNegative("whileArriving", p.WhileArriving)
	nonNegative("runP50Seconds", p.RunP50Seconds)
	nonNegative("runP99Seconds", p.RunP99Seconds)
	if p.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	}
	switch p.Arrival {
	case Backlog:
	case Steady:
		positive("rate", p.Rate)
	default:
		errs = append(errs, field.NotSupported(path.Child("arrival"), p.Arrival, []string{Backlog, Steady}))
	}
	return errs
}

// Read decodes a figures file strictly and validates it.
func Read(path string) (*File, error) {
	data, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer data.Close()
	dec := json.NewDecoder(data)
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if errs := f.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", path, errs.ToAggregate())
	}
	return &f, nil
}

// Write encodes the file, indented, after validating it.
func Write(w io.Writer, f *File) error {
	if errs := f.Validate(); len(errs) > 0 {
		return errors.Join(errors.New("benchmark figures"), errs.ToAggregate())
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}
