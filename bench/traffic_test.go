package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

func testMatrix(t *testing.T, scale float64) *Traffic {
	t.Helper()
	tr, err := readTrafficFile(t, "testdata/traffic5.txt", scale)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestTrafficMatchesNcclTests compares alltoallv's accounting with the
// figures nccl-tests' own code printed for the same inputs
// (testdata/alltoallv_nccl_tests.txt): the count argument, the buffer
// counts and every per-peer share, over spreads, rank counts, types and
// sizes, and for a matrix file read with a scale.
func TestTrafficMatchesNcclTests(t *testing.T) {
	f, err := os.Open("testdata/alltoallv_nccl_tests.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	matrix := testMatrix(t, 1.5)
	checked := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, ":")
		in, want := strings.Fields(parts[0]), strings.Fields(parts[1])
		tr := &Traffic{Spread: 1}
		var n, elt int
		var count int64
		if in[0] == "gen" {
			tr.Spread, _ = strconv.ParseFloat(in[1], 64)
			n, elt = atoi(t, in[2]), atoi(t, in[3])
			count = int64(atoi(t, in[4]))
		} else {
			tr = matrix
			n, elt, count = atoi(t, in[1]), atoi(t, in[2]), 123456
		}
		got := tr.counts(count, elt, n)
		if g := fmt.Sprint(got.Param, got.Send, got.Recv); g != strings.Join(want, " ") {
			t.Errorf("%s: param, send, recv = %s", line, g)
		}
		if len(parts) == 3 {
			var shares []string
			for i := 0; i < n && n <= 5; i++ {
				for j := 0; j < n; j++ {
					shares = append(shares, fmt.Sprint(tr.PeerBytes(i, j, n, got.Total(elt, n))))
				}
			}
			if g, w := strings.Join(shares, " "), strings.Join(strings.Fields(parts[2]), " "); g != w {
				t.Errorf("%s: shares %s", line, g)
			}
		}
		checked++
	}
	if checked < 900 {
		t.Fatalf("only %d cases read", checked)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestReadTrafficMatrixErrors(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"empty", " \n\t\n", "is empty"},
		{"ragged", "1 2\n3\n", "row 2 has 1 values"},
		{"not square", "1 2\n3 4\n5 6\n", "must be square"},
		{"too few rows", "1 2 3\n4 5 6\n", "must be square"},
		{"negative", "1 -2\n3 4\n", `"-2" is not a byte count`},
		{"word", "1 x\n3 4\n", `"x" is not a byte count`},
		{"nan", "1 nan\n3 4\n", "is not a byte count"},
		{"huge", "1 1e300\n3 4\n", "too large"},
		{"row overflows", "0 3e18 3e18\n3e18 0 0\n0 0 0\n", "rank 1 sends or receives more bytes than can be counted"},
		{"column overflows", "0 0 3e18\n0 0 3e18\n0 0 0\n", "rank 3 sends or receives more bytes than can be counted"},
	}
	for _, tt := range tests {
		_, err := ReadTrafficMatrix(strings.NewReader(tt.text), 1, "m.txt")
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line with %q", tt.name, err, tt.want)
		}
	}
	if _, err := ReadTrafficMatrix(strings.NewReader("1"), -1, "m.txt"); err == nil {
		t.Error("negative scale accepted")
	}
}

// TestTrafficCheck: a matrix smaller than the communicator, a sweep over
// a matrix and buffers too small for it are refused, as nccl-tests does.
func TestTrafficCheck(t *testing.T) {
	m := testMatrix(t, 1.5)
	one := Sweep{Min: 32 << 20, Max: 32 << 20, Factor: 1, Step: 1}
	if err := m.check(5, one); err != nil {
		t.Errorf("5 ranks: %v", err)
	}
	if err := m.check(6, one); err == nil || !strings.Contains(err.Error(), "smaller than the 6 ranks") {
		t.Errorf("6 ranks: %v", err)
	}
	if err := m.check(4, Sweep{Min: 1 << 20, Max: 32 << 20, Factor: 2}); err == nil || !strings.Contains(err.Error(), "same value") {
		t.Errorf("sweep: %v", err)
	}
	// The busiest of 5 ranks sends 22464 bytes (see the nccl-tests figures).
	if err := m.check(5, Sweep{Min: 22463, Max: 22463, Factor: 1, Step: 1}); err == nil || !strings.Contains(err.Error(), "at least 22464") {
		t.Errorf("small -e: %v", err)
	}
	if err := (&Traffic{Spread: 1.5}).check(4, one); err == nil {
		t.Error("spread 1.5 accepted")
	}
}

func FuzzReadTrafficMatrix(f *testing.F) {
	f.Add("100 200\n50 100\n", 1.0)
	f.Add("1e3\t2\r\n3 4", 0.5)
	f.Add("", 1.0)
	f.Fuzz(func(t *testing.T, text string, scale float64) {
		tr, err := ReadTrafficMatrix(strings.NewReader(text), scale, "fuzz")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		if tr.Dim < 1 || len(tr.Matrix) != tr.Dim*tr.Dim {
			t.Fatalf("dim %d with %d values", tr.Dim, len(tr.Matrix))
		}
		for _, v := range tr.Matrix {
			if v < 0 || v%16 != 0 {
				t.Fatalf("share %d is not a non-negative multiple of 16", v)
			}
		}
	})
}

// readTrafficFile reads a traffic matrix file for a test.
func readTrafficFile(t *testing.T, path string, scale float64) (*Traffic, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return ReadTrafficMatrix(bytes.NewReader(data), scale, path)
}
