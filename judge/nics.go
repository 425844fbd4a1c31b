package judge

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ReadNICs lists the node's active network ports under root (/ outside
// tests) and their rates: InfiniBand and RoCE ports from
// /sys/class/infiniband/*/ports/*/{state,rate}; where there are none,
// Ethernet interfaces backed by a device (not loopback, bridges or veth
// pairs) from /sys/class/net/*/{operstate,speed}. A RoCE port is counted
// once, as its InfiniBand port.
func ReadNICs(root string) []NIC {
	if nics := infiniband(root); len(nics) > 0 {
		return nics
	}
	return ethernet(root)
}

func infiniband(root string) []NIC {
	ports, _ := filepath.Glob(filepath.Join(root, "sys/class/infiniband/*/ports/*"))
	sort.Strings(ports)
	var out []NIC
	for _, p := range ports {
		if state := readTrim(filepath.Join(p, "state")); !strings.Contains(state, "ACTIVE") {
			continue
		}
		rate := readTrim(filepath.Join(p, "rate")) // "400 Gb/sec (4X NDR)"
		f := strings.Fields(rate)
		if len(f) < 2 || !strings.HasPrefix(f[1], "Gb/s") {
			continue
		}
		gbit, err := strconv.ParseFloat(f[0], 64)
		if err != nil || gbit <= 0 {
			continue
		}
		dev := filepath.Base(filepath.Dir(filepath.Dir(p)))
		out = append(out, NIC{Name: dev + " port " + filepath.Base(p), GBps: gbit / 8, Rate: strings.TrimSpace(strings.SplitN(rate, "(", 2)[0])})
	}
	return out
}

func ethernet(root string) []NIC {
	ifaces, _ := filepath.Glob(filepath.Join(root, "sys/class/net/*"))
	sort.Strings(ifaces)
	var out []NIC
	for _, p := range ifaces {
		if _, err := os.Stat(filepath.Join(p, "device")); err != nil {
			continue // loopback, bridge, veth, tunnel: no device of its own
		}
		if readTrim(filepath.Join(p, "operstate")) != "up" {
			continue
		}
		mbit, err := strconv.ParseFloat(readTrim(filepath.Join(p, "speed")), 64)
		if err != nil || mbit <= 0 {
			continue
		}
		out = append(out, NIC{Name: filepath.Base(p), GBps: mbit / 8000, Rate: strconv.FormatFloat(mbit/1000, 'g', -1, 64) + " Gb/s"})
	}
	return out
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
