package switchover

import (
	"context"
	"fmt"
	"io"

	"k8s.io/client-go/kubernetes"
)

// direction is the frame of Switch and Back: read the state, check it,
// report it, take (or, in a dry run, print) the steps, and print the
// notes.
type direction struct {
	check func(context.Context, kubernetes.Interface, Options, *state) error
	steps func(kubernetes.Interface, Options, *state) []step
	notes func(io.Writer, Options, *state)
}

func (d direction) do(ctx context.Context, client kubernetes.Interface, o Options) error {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return err
	}
	s, err := observe(ctx, client, o)
	if err != nil {
		return err
	}
	if err := d.check(ctx, client, o, s); err != nil {
		return err
	}
	s.report(o.Out)
	if err := run(ctx, o.Out, d.steps(client, o, s), o.DryRun); err != nil {
		return err
	}
	d.notes(o.Out, o, s)
	return nil
}

// step is one change: what it does, in a sentence, and doing it.
type step struct {
	what string
	do   func(context.Context) error
}

// run prints the steps and, unless dryRun, does them in order, stopping at
// the first that fails.
func run(ctx context.Context, out io.Writer, steps []step, dryRun bool) error {
	if len(steps) == 0 {
		fmt.Fprintln(out, "Nothing to change.")
		return nil
	}
	if dryRun {
		fmt.Fprintln(out, "Steps (dry run: none is taken):")
		for i, s := range steps {
			fmt.Fprintf(out, "  %d. %s\n", i+1, s.what)
		}
		return nil
	}
	fmt.Fprintln(out, "Steps:")
	for i, s := range steps {
		fmt.Fprintf(out, "  %d. %s\n", i+1, s.what)
		if err := s.do(ctx); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, s.what, err)
		}
	}
	return nil
}
