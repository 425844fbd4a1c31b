package cluster

import (
	"strings"
	"testing"
)

func mapEnv(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestRendezvousAddress(t *testing.T) {
	cases := []struct {
		name     string
		job      Job
		explicit string
		env      map[string]string
		want     string
		err      string
	}{
		{name: "one host", job: Job{}, want: "127.0.0.1:29511"},
		{name: "master", job: Job{MasterAddr: "10.0.0.5", MasterPort: 1234}, want: "10.0.0.5:1234"},
		{name: "master without port", job: Job{MasterAddr: "node7"}, want: "node7:29511"},
		{name: "slurm first node", job: Job{Nodes: []string{"gpu03", "gpu04"}}, env: map[string]string{"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0"}, want: "gpu03:"},
		{name: "flag wins", job: Job{MasterAddr: "a", MasterPort: 1}, explicit: "b:2", want: "b:2"},
		{name: "flag host only", job: Job{MasterPort: 5000}, explicit: "10.1.1.1", want: "10.1.1.1:5000"},
		{name: "bad port", explicit: "h:99999", err: "not a TCP port"},
		{name: "several hosts, no address", job: Job{Size: 16, LocalSize: 8}, err: "span several hosts"},
		{name: "several hosts, flag", job: Job{Size: 16, LocalSize: 8}, explicit: "n1:7000", want: "n1:7000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.job.Rendezvous(c.explicit, mapEnv(c.env))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %q, %v; want error %q", got, err, c.err)
				}
				return
			}
			if err != nil || !strings.HasPrefix(got, c.want) {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// Ranks of one job agree on the derived port; another job gets another.
func TestRendezvousPortFromJobID(t *testing.T) {
	a, _ := Job{}.Rendezvous("", mapEnv(map[string]string{"OMPI_MCA_ess_base_jobid": "324730881"}))
	b, _ := Job{}.Rendezvous("", mapEnv(map[string]string{"OMPI_MCA_ess_base_jobid": "324730881"}))
	c, _ := Job{}.Rendezvous("", mapEnv(map[string]string{"OMPI_MCA_ess_base_jobid": "324730882"}))
	if a != b || a == c || a == "127.0.0.1:29511" {
		t.Errorf("ports %s %s %s", a, b, c)
	}
}

func TestToken(t *testing.T) {
	cases := []struct {
		env        map[string]string
		token, src string
	}{
		{map[string]string{"COLLBENCH_TOKEN": "s3cret", "SLURM_JOB_ID": "5"}, "s3cret", "COLLBENCH_TOKEN"},
		{map[string]string{"SLURM_JOB_ID": "5", "SLURM_STEP_ID": "2"}, "job:5.2", "Slurm job id"},
		{map[string]string{"OMPI_MCA_ess_base_jobid": "9", "SLURM_JOB_ID": "5"}, "job:9", "OpenMPI job id"},
		{map[string]string{"TORCHELASTIC_RUN_ID": "none"}, "addr:h:1", "the rendezvous address"},
	}
	for _, c := range cases {
		tok, src := Token(mapEnv(c.env), "h:1")
		if tok != c.token || !strings.HasPrefix(src, c.src) {
			t.Errorf("%v: got %q from %q; want %q from %q", c.env, tok, src, c.token, c.src)
		}
	}
}
