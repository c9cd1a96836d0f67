package kafkanet

// MaxFileLimit caps the file-descriptor limit RaiseFileLimit reports: an
// unlimited RLIMIT_NOFILE is counted as this many, so that a budget shared
// out of it (the broker's connections and log files) stays finite.
const MaxFileLimit = 1 << 20
