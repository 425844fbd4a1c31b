module github.com/collbench/collbench

go 1.26

require github.com/montanaflynn/stats v0.14.0

require github.com/spf13/pflag v1.0.10

require (
	github.com/NVIDIA/go-nvml v0.13.3-0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
)

require golang.org/x/text v0.14.0 // indirect
