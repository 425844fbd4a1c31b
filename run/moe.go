package run

import (
	"context"

	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
)

// MoESpec is a mixture-of-experts layer's exchanges, as collbench
// alltoallv --moe runs them.
type MoESpec struct {
	Routing *bench.Routing
	Type    numeric.DataType
	Draws   int // routing draws the timed calls cycle through
	// Opts carries the iterations, warm-up, checks, -a and -m; the
	// collective and the sizes follow from the routing.
	Opts bench.Options
	Args []string // the command line, recorded in the document
}

// MoEHooks hear of a mixture-of-experts run: its record laid out, each
// phase (dispatch, combine) once measured, and the finished record.
type MoEHooks = Hooks[*document.MoERun, document.MoEPhase]

// MoE measures dispatch and combine of spec's routing on the job's
// communicators. It returns the record (nil when nothing ran) and an
// error: Write's if it failed, else the measurement's.
func (j *Job) MoE(ctx context.Context, spec MoESpec, h MoEHooks) (*document.MoERun, error) {
	return Drive(ctx, j, &moeRun{base: base[MoESpec]{j, spec}}, h)
}

// moeRun is a mixture-of-experts layer as Drive runs it.
type moeRun struct {
	base[MoESpec]
	opts bench.Options
	size int64 // the buffers' bytes
	sess *Session
	doc  *document.MoERun
}

func (m *moeRun) Check(ctx context.Context, j *Job) error {
	spec := m.spec
	nranks, groups := j.World(), j.Settings.Grouping
	if err := groups.Validate(nranks); err != nil {
		return Usagef("{GroupSize}: %v", err)
	}
	commRanks := groups.Of(nranks)
	if err := spec.Routing.Check(commRanks); err != nil {
		return Usagef("{MoE}: %v", err)
	}
	if err := spec.Routing.CheckDraws(commRanks, spec.Draws); err != nil {
		return Usagef("{MoE}: %v", err)
	}
	// The buffers hold the busiest rank of the heaviest draw; combine,
	// the same exchange reversed, needs no more.
	traffic, err := spec.Routing.Traffic(ctx, commRanks, spec.Type.Size(), spec.Draws)
	if err != nil {
		return err
	}
	dispatch, err := bench.Collectives[bench.AllToAllV].WithTraffic(traffic)
	if err != nil {
		return err
	}
	m.size = max(dispatch.Counts(0, spec.Type.Size(), commRanks).Bytes(spec.Type.Size()), 1)
	opts := spec.Opts
	opts.Coll, opts.Sweep, opts.Types, opts.Root = dispatch, bench.Sweep{Min: m.size, Max: m.size, Factor: 2}, []numeric.DataType{spec.Type}, -1
	if opts, err = opts.Validate(commRanks); err != nil {
		return UsageError{err}
	}
	opts.Timeout, opts.StallFloor = j.Limits.Collective, j.Limits.Watchdog
	m.opts = opts
	return nil
}

func (m *moeRun) Opening(context.Context, *Job) (Opening, error) {
	return Opening{Sweep: m.opts.Sweep, Check: m.opts.Check > 0, Command: "alltoallv", Span: "sweep",
		Attrs: []attribute.KeyValue{attribute.String("collbench.collective", "alltoallv")}}, nil
}

func (m *moeRun) Begin(_ context.Context, sess *Session) (*document.MoERun, int, error) {
	j, spec, opts := m.j, m.spec, m.opts
	m.sess = sess
	if sess.Sweep.Max < m.size {
		return nil, 0, Usagef("{MoE} needs %d-byte buffers; the devices hold %d (fewer {Tokens} or a smaller {Hidden})", m.size, sess.Sweep.Max)
	}
	if check := sess.Comm.Capabilities().Type; check != nil {
		if err := check(spec.Type); err != nil {
			return nil, 0, UsageError{err}
		}
	}
	r := spec.Routing
	m.doc = &document.MoERun{Stamp: document.NewStamp(document.MoESchemaName, document.MoESchemaVersion, j.Settings.Version,
		sess.Backend.Name(), spec.Args),
		Config: document.MoEConfig{Experts: r.Experts, TopK: r.TopK, Tokens: r.Tokens, Hidden: r.Hidden, Type: spec.Type.String(),
			Routing: r.Name, Seed: r.Seed, Draws: spec.Draws, NRanks: j.World(), NProcs: j.Size, GroupSize: j.Settings.Grouping.Of(j.World()),
			Iters: opts.Iters, Warmup: opts.Warmup, Check: opts.Check, Average: int(opts.Average), Devices: document.DeviceRecords(sess.Devices)}}
	return m.doc, 2, nil // dispatch and combine
}

func (m *moeRun) Measure(_ context.Context, out *Recording[document.MoEPhase]) error {
	j, groups := m.j, m.j.Settings.Grouping
	eng := &bench.Engine{Comm: m.sess.Comm, Peers: j.Peers(), Opts: m.opts, CommRanks: groups.Of(j.World()), Groups: groups.Groups(j.World())}
	phases, err := eng.MoE(out.ctx, m.spec.Routing, m.spec.Type, m.spec.Draws)
	for _, p := range phases {
		rec := document.MakeMoEPhase(p)
		m.doc.Phases = append(m.doc.Phases, rec)
		out.Hand(rec, p.Name)
	}
	return err
}

func (m *moeRun) Finish(_ context.Context, _ *Recording[document.MoEPhase], runErr error) error {
	m.doc.Finish()
	noteErr(&m.doc.Errors, runErr)
	return nil
}
