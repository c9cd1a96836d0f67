# Developer targets. CI runs .ci/run, which runs the README's test command.
GO ?= go
COUNT ?= 10
FUZZTIME ?= 60s
BENCHSTAT = $(GO) run golang.org/x/perf/cmd/benchstat@latest

.PHONY: test bench-timer fuzz

test:
	$(GO) test -race ./...

# Wheel and time.AfterFunc side by side in one run; benchstat compares them.
bench-timer:
	$(GO) test -run '^$$' -bench . -benchtime=1s -count=$(COUNT) -timeout 3h ./timer | tee bench-timer.txt
	$(BENCHSTAT) -col /impl bench-timer.txt

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzWheelAgainstHeap -fuzztime $(FUZZTIME) ./timer
