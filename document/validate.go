package document

import "fmt"

// validate refuses an audit record whose indices point at nothing: the
// chosen setting, and in its price (an ab record) the arms. A record is
// input, edited or cut short as any file may be, and is checked as it is
// read so that no reader indexes past what it holds.
func (a *AuditRun) validate() error {
	if a.Chosen != nil && (*a.Chosen < 0 || *a.Chosen >= len(a.Settings)) {
		return fmt.Errorf("\"chosen\" is %d, and the record holds %d setting(s)", *a.Chosen, len(a.Settings))
	}
	if a.Price != nil {
		if err := a.Price.validate(); err != nil {
			return fmt.Errorf("\"price\": %w", err)
		}
	}
	return nil
}

// validate refuses an ab record whose arm indices point at no arm: the
// base, each row's figures and each band's best.
func (d *ABRun) validate() error {
	arm := func(what string, i, lowest int) error {
		if i < lowest || i >= len(d.Arms) {
			return fmt.Errorf("%s is arm %d, and the record holds %d arm(s)", what, i, len(d.Arms))
		}
		return nil
	}
	if err := arm(`"base"`, d.Base, -1); err != nil {
		return err
	}
	for _, r := range d.Rows {
		for _, f := range r.Arms {
			if err := arm(fmt.Sprintf("a figure of row %s %d", r.Name, r.Size), f.Arm, 0); err != nil {
				return err
			}
		}
	}
	for _, b := range d.Bands {
		if err := arm(fmt.Sprintf("the best of band %s", b.Name), b.Best, 0); err != nil {
			return err
		}
	}
	return nil
}

// maxCount bounds a run's counts of threads, GPUs, ranks, processes and
// groups: far above any job, far below what a reader could allocate for.
const maxCount = 1 << 24

// validate refuses a run whose counts no job has: negative, or beyond
// maxCount. Readers size their tables by them.
func (r *Run) validate() error {
	c := r.Config
	for _, f := range []struct {
		name string
		v    int
	}{
		{"nthreads", c.NThreads}, {"ngpus", c.NGPUs}, {"nranks", c.NRanks}, {"nprocs", c.NProcs},
		{"group_size", c.GroupSize}, {"groups", c.Groups}, {"bitwise_repeats", c.BitwiseRepeats},
	} {
		if f.v < 0 || f.v > maxCount {
			return fmt.Errorf("\"config\".%q is %d: want 0 to %d", f.name, f.v, maxCount)
		}
	}
	return nil
}
