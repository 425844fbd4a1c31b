package run

// Progress hears, on rank 0, how far a measurement has come. Job.drive
// tells it alike whatever the measurement: Begin once the steps are
// planned, Update as each ends, Clear before anything else is printed (a
// table row, the outputs) and at the end; Print is a line of the
// measurement's own (a profile's curve done), shown above it.
type Progress interface {
	Begin(label string, planned int)
	Update(done int, what string)
	Clear()
	Print(line string)
}

// noProgress is the progress of a job that shows none, and of every rank
// but 0.
type noProgress struct{}

func (noProgress) Begin(string, int)  {}
func (noProgress) Update(int, string) {}
func (noProgress) Clear()             {}
func (noProgress) Print(string)       {}

// progress is what this process tells of its measurements' progress.
func (j *Job) progress() Progress {
	if j.Progress == nil || j.Rank != 0 {
		return noProgress{}
	}
	return j.Progress
}
