package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collbench/collbench/internal/tier"
)

// realLauncher finds a launcher from Debian's archive; .ci/run installs
// each, so in CI a missing one fails the test, elsewhere it is skipped.
func realLauncher(t *testing.T, name, pkg string) string {
	t.Helper()
	tier.System(t, "a real launcher")
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing; .ci/run installs %s", name, pkg)
		}
		t.Skipf("%s not installed (apt-get install %s)", name, pkg)
	}
	return path
}

// runLauncher runs a launcher's command line with this test binary as
// collbench, within a minute, and returns its standard output.
func runLauncher(t *testing.T, what string, env []string, name string, args ...string) string {
	t.Helper()
	return runLauncherWithin(t, time.Minute, what, env, name, args...)
}

// runLauncherWithin is runLauncher with its own deadline, for a command
// that runs many rounds.
func runLauncherWithin(t *testing.T, limit time.Duration, what string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(append(os.Environ(), asMain+"=1"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s\n%s", what, err, out.String(), errOut.String())
	}
	return out.String()
}

// MPICH's hydra mpiexec (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID,
// MPI_LOCALNRANKS) starts the ranks: one table, nothing wrong.
func TestMpichMpiexec(t *testing.T) {
	mpiexec := realLauncher(t, "mpiexec.mpich", "mpich")
	for _, coll := range []string{"allreduce", "allgather", "alltoall", "sendrecv", "broadcast"} {
		out := runLauncher(t, "mpiexec.mpich "+coll, nil, mpiexec, "-n", "4", os.Args[0], coll, "-b", "8", "-e", "64K", "-f", "8", "-n", "2")
		checkTable(t, "mpiexec.mpich "+coll, out)
		if !strings.Contains(out, "# Job: 4 processes × 1 rank(s) from pmi") {
			t.Errorf("%s: job not read from MPICH's environment:\n%s", coll, out)
		}
	}
}

// torchrun's elastic agent (RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, MASTER_ADDR/PORT, TORCHELASTIC_*) starts the ranks,
// with its static rendezvous, whose agent holds MASTER_PORT itself, and
// with --standalone, whose does not. --redirects 2 --tee 2 keep Debian's
// torchrun 1.13 working on Python 3.11 (its default "0" parses to None
// there) and leave standard output alone.
func TestTorchrun(t *testing.T) {
	torchrun := realLauncher(t, "torchrun", "python3-torch")
	port := freePort(t)
	for _, c := range []struct {
		name string
		args []string
		job  string
	}{
		{"static", []string{"--master_port", strconv.Itoa(port)}, "rendezvous 127.0.0.1:" + strconv.Itoa(port+1) + " (MASTER_PORT+1: torchrun's agent holds MASTER_PORT)"},
		{"standalone", []string{"--standalone"}, "token from torchrun run id"},
	} {
		args := append(append([]string{"--nproc_per_node", "4"}, c.args...), "--no_python", "--redirects", "2", "--tee", "2",
			"--log_dir", t.TempDir(), os.Args[0], "allreduce", "-b", "8", "-e", "64K", "-f", "8", "-n", "2")
		out := runLauncher(t, "torchrun "+c.name, nil, torchrun, args...)
		checkTable(t, "torchrun "+c.name, out)
		if !strings.Contains(out, "# Job: 4 processes × 1 rank(s) from torchrun") || !strings.Contains(out, c.job) {
			t.Errorf("%s: want the job from torchrun's environment with %q:\n%s", c.name, c.job, out)
		}
	}
}

// slurmCluster starts a one-node Slurm cluster from Debian's slurm-wlm in
// dir: munged with a key of its own, slurmctld and slurmd on free ports,
// as the current user, with a node of 4 CPUs (more than the host may
// have; slurmd is told to trust the configuration). It returns the
// environment that points srun and sbatch at it; the daemons stop with
// the test.
func slurmCluster(t *testing.T) []string {
	t.Helper()
	tier.System(t, "a Slurm cluster")
	for _, prog := range []string{"munged", "slurmctld", "slurmd", "srun", "sbatch", "sinfo"} {
		pkg := "slurm-wlm"
		if prog == "munged" {
			pkg = "munge"
		}
		realLauncher(t, prog, pkg)
	}
	dir := t.TempDir()
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	key := make([]byte, 1024)
	rand.Read(key)
	if err := os.WriteFile(filepath.Join(dir, "munge.key"), key, 0o400); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"state", "spool"} {
		os.Mkdir(filepath.Join(dir, sub), 0o755)
	}
	conf := fmt.Sprintf(`ClusterName=collbench
SlurmctldHost=%[1]s(127.0.0.1)
SlurmUser=%[2]s
SlurmdUser=%[2]s
AuthType=auth/munge
AuthInfo=socket=%[3]s/munge.socket
CredType=cred/munge
StateSaveLocation=%[3]s/state
SlurmdSpoolDir=%[3]s/spool
SlurmctldPidFile=%[3]s/slurmctld.pid
SlurmdPidFile=%[3]s/slurmd.pid
SlurmctldLogFile=%[3]s/slurmctld.log
SlurmdLogFile=%[3]s/slurmd.log
SlurmctldPort=%[4]d
SlurmdPort=%[5]d
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=%[1]s NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`, host, me.Username, dir, freePort(t), freePort(t))
	confPath := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"SLURM_CONF=" + confPath}
	daemon := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), env...)
		log, err := os.Create(filepath.Join(dir, filepath.Base(name)+".out"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			log.Close()
		})
	}
	daemon("munged", "--foreground", "--force", "--key-file="+filepath.Join(dir, "munge.key"), "--socket="+filepath.Join(dir, "munge.socket"),
		"--pid-file="+filepath.Join(dir, "munged.pid"), "--log-file="+filepath.Join(dir, "munged.log"), "--seed-file="+filepath.Join(dir, "munged.seed"))
	waitFor(t, dir, "munge's socket", func() bool { _, err := os.Stat(filepath.Join(dir, "munge.socket")); return err == nil })
	daemon("slurmctld", "-D", "-f", confPath)
	daemon("slurmd", "-D", "-f", confPath, "-N", host)
	waitFor(t, dir, "the node to be idle", func() bool {
		cmd := exec.Command("sinfo", "-h", "-o", "%t")
		cmd.Env = append(os.Environ(), env...)
		out, _ := cmd.Output()
		return strings.TrimSpace(string(out)) == "idle"
	})
	return env
}

// waitFor polls ready for 30 s; past that the test fails with the
// daemons' logs in dir.
func waitFor(t *testing.T, dir, what string, ready func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if ready() {
			return
		}
	}
	var logs strings.Builder
	for _, f := range []string{"munged.out", "munged.log", "slurmctld.out", "slurmctld.log", "slurmd.out", "slurmd.log"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		fmt.Fprintf(&logs, "--- %s\n%s", f, b)
	}
	t.Fatalf("waiting for %s: gave up after 30 s\n%s", what, logs.String())
}

// Slurm from Debian's slurm-wlm: srun -n 4 starts the ranks, and the
// shipped scripts/slurm.sbatch runs through sbatch, overridden on the
// command line only where one CPU-only node must (nodes, tasks, CPUs,
// GPUs, output files); both read the real SLURM_* variables.
func TestSlurm(t *testing.T) {
	env := slurmCluster(t)
	out := runLauncher(t, "srun", env, "srun", "-n", "4", os.Args[0], "allreduce", "-b", "8", "-e", "64K", "-f", "8", "-n", "2")
	checkTable(t, "srun", out)
	if !strings.Contains(out, "# Job: 4 processes × 1 rank(s) from slurm") || !strings.Contains(out, "token from Slurm job id") {
		t.Errorf("srun: job not read from Slurm's environment:\n%s", out)
	}
	dir := t.TempDir()
	runLauncher(t, "sbatch", append(env, "COLLBENCH="+os.Args[0]), "sbatch", "--wait", "--nodes=1", "--ntasks-per-node=4", "--cpus-per-task=1",
		"--gpus-per-node=0", "--output="+dir+"/job-%j.out", "--error="+dir+"/job-%j.err",
		"../../scripts/slurm.sbatch", "alltoall", "-b", "1K", "-e", "64K", "-f", "8", "-n", "2")
	outs, _ := filepath.Glob(dir + "/job-*.out")
	if len(outs) != 1 {
		t.Fatalf("sbatch: want one job output file, found %v", outs)
	}
	b, err := os.ReadFile(outs[0])
	if err != nil {
		t.Fatal(err)
	}
	checkTable(t, "sbatch scripts/slurm.sbatch", string(b))
	if strings.Count(string(b), "# Collective test concluded") != 1 || !strings.Contains(string(b), "from slurm") {
		t.Errorf("sbatch: want one table of a Slurm job in %s:\n%s", outs[0], b)
	}
	// A bare collbench in a batch script, without srun: refused at once
	// with the way to start it, where it waited 120 s for tasks nobody
	// started.
	bare := filepath.Join(dir, "bare.sh")
	if err := os.WriteFile(bare, []byte("#!/bin/bash\n\"$COLLBENCH\" allreduce -b 8 -e 8 -n 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	cmd := exec.CommandContext(ctx, "sbatch", "--wait", "--nodes=1", "--ntasks-per-node=4", "--cpus-per-task=1", "--gpus-per-node=0",
		"--output="+dir+"/bare.out", "--error="+dir+"/bare.err", bare)
	cmd.Env = append(append(os.Environ(), asMain+"=1", "COLLBENCH="+os.Args[0]), env...)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("sbatch of a bare collbench succeeded: %s", out)
	}
	took := time.Since(began)
	errText, _ := os.ReadFile(dir + "/bare.err")
	if !strings.Contains(string(errText), "start collbench with srun (srun collbench …, as scripts/slurm.sbatch does), which starts the allocation's 4 task(s)") || took > 30*time.Second {
		t.Errorf("a bare collbench in a batch script: after %s, stderr %q; want the srun advice at once", took, errText)
	}
}

// The Kubernetes recipe passes kubeconform (strict) against the MPI
// Operator's own MPIJob schema (scripts/k8s-validate.sh), and the check is
// real: a manifest with a misspelt field or a wrong type is refused.
func TestK8sManifest(t *testing.T) {
	tier.System(t, "a script")
	validate := func(file string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // kubeconform builds on first use
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "../../scripts/k8s-validate.sh", file)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code == 2 {
			if os.Getenv("CI") != "" {
				t.Fatalf("the validator could not be had:\n%s", out)
			}
			t.Skipf("the validator could not be had:\n%s", out)
		}
		return code, string(out)
	}
	if code, out := validate("scripts/k8s-mpijob.yaml"); code != 0 || !strings.Contains(out, "Valid: 1, Invalid: 0, Errors: 0") {
		t.Fatalf("scripts/k8s-mpijob.yaml: exit %d\n%s", code, out)
	}
	good, err := os.ReadFile("../../scripts/k8s-mpijob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string][2]string{
		"misspelt field": {"slotsPerWorker: 8", "slotPerWorker: 8"},
		"wrong type":     {"replicas: 2", "replicas: two"},
	} {
		bad := filepath.Join(t.TempDir(), "mpijob.yaml")
		if err := os.WriteFile(bad, []byte(strings.Replace(string(good), edit[0], edit[1], 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out := validate(bad); code != 1 || !strings.Contains(out, "Invalid: 1") {
			t.Errorf("%s: exit %d, want the manifest refused\n%s", name, code, out)
		}
	}
}

// ab under each cluster launcher: its processes meet as the collectives'
// ranks do, every round's arm processes meet at a rendezvous of their
// own, and rank 0 prints one table with both arms at every size. The
// arms are alike and the threshold wide, so the exit is 0 whatever the
// noise.
func TestABUnderLaunchers(t *testing.T) {
	ab := []string{"ab", "-q", "--arm", "name=one AB_ARM=1 -c 1", "--arm", "name=two AB_ARM=2 -c 1", "--rounds", "5", "--threshold", "1000", "--alpha", "0.05",
		"--", "allreduce", "-b", "1K", "-e", "16K", "-f", "4", "-n", "5"}
	check := func(t *testing.T, what, out string) {
		t.Helper()
		v := abVerdicts(out)
		if len(v) != 3 {
			t.Fatalf("%s: %d sizes judged, want 3:\n%s", what, len(v), out)
		}
		for size, arms := range v {
			if arms["A"] != "base" || arms["B"] != "same" {
				t.Errorf("%s: %s: verdicts %v:\n%s", what, size, arms, out)
			}
		}
	}
	t.Run("mpirun", func(t *testing.T) {
		mpirun := mpirunPath(t)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := mpirunRanks(ctx, mpirun, 2, ab...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v\n%s\n%s", err, out.String(), errOut.String())
		}
		check(t, "mpirun", out.String())
	})
	t.Run("mpiexec.mpich", func(t *testing.T) {
		mpiexec := realLauncher(t, "mpiexec.mpich", "mpich")
		check(t, "mpiexec.mpich", runLauncher(t, "mpiexec.mpich ab", nil, mpiexec, append([]string{"-n", "2", os.Args[0]}, ab...)...))
	})
	t.Run("torchrun", func(t *testing.T) {
		torchrun := realLauncher(t, "torchrun", "python3-torch")
		args := append([]string{"--nproc_per_node", "2", "--master_port", strconv.Itoa(freePort(t)), "--no_python", "--redirects", "2",
			"--tee", "2", "--log_dir", t.TempDir(), os.Args[0]}, ab...)
		check(t, "torchrun", runLauncher(t, "torchrun ab", nil, torchrun, args...))
	})
	t.Run("srun", func(t *testing.T) {
		realLauncher(t, "srun", "slurm-wlm")
		env := slurmCluster(t)
		check(t, "srun", runLauncher(t, "srun ab", env, "srun", append([]string{"-n", "2", os.Args[0]}, ab...)...))
	})
}

// tune under cluster launchers: every process takes rank 0's plan, and
// rank 0 prints one table and writes one file.
func TestTuneUnderLaunchers(t *testing.T) {
	t.Setenv("COLLBENCH_HOST_DOUBLING_MAX", "0")
	dir := t.TempDir()
	tune := func(name string) []string {
		return []string{"tune", "-q", "--rounds", "7", "-o", filepath.Join(dir, name+".conf"), "--", "allreduce", "-b", "1K", "-e", "16K", "-f", "16", "-n", "5", "-w", "1"}
	}
	check := func(t *testing.T, name, out string) {
		t.Helper()
		if strings.Count(out, "# collbench tune:") != 1 || !strings.Contains(out, "host backend, 2 rank(s) on 1 node(s)") {
			t.Errorf("%s:\n%s", name, out)
		}
		if _, err := os.Stat(filepath.Join(dir, name+".conf")); err != nil {
			t.Errorf("%s: no file: %v", name, err)
		}
	}
	t.Run("mpirun", func(t *testing.T) {
		mpirun := mpirunPath(t)
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		cmd := mpirunRanks(ctx, mpirun, 2, tune("mpirun")...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v\n%s\n%s", err, out.String(), errOut.String())
		}
		check(t, "mpirun", out.String())
	})
	t.Run("torchrun", func(t *testing.T) {
		torchrun := realLauncher(t, "torchrun", "python3-torch")
		args := append([]string{"--nproc_per_node", "2", "--master_port", strconv.Itoa(freePort(t)), "--no_python", "--redirects", "2",
			"--tee", "2", "--log_dir", t.TempDir(), os.Args[0]}, tune("torchrun")...)
		// tune's rounds and proof: as long as mpirun's above, and torchrun
		// starts Python first (60 s was not enough on two busy cores).
		check(t, "torchrun", runLauncherWithin(t, 120*time.Second, "torchrun tune", nil, torchrun, args...))
	})
}
