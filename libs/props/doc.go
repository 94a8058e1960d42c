// Package props loads a service's configuration the way RocketMQ operators
// expect it: a Java-style properties file (`-c broker.conf`) using RocketMQ's
// key names, where every key can also be set by an environment variable and by
// a command-line flag.
//
// Precedence, lowest first:
//
//	Config defaults (DefaultConfig of the service)
//	  < properties file given with -c FILE
//	  < environment variables  RMQ_<KEY_IN_UPPER_SNAKE_CASE>  (listenPort -> RMQ_LISTEN_PORT,
//	                                                          tls.server.mode -> RMQ_TLS_SERVER_MODE)
//	  < flags                  -listenPort=10911
//
// Keys bind to struct fields tagged `prop:"name"`. Supported field types are
// string, bool, int, int32, int64, float64, []string (comma separated) and
// time.Duration. A duration tagged `prop:"name,ms"` takes RocketMQ's integer
// milliseconds ("500") and also accepts Go duration strings ("500ms").
//
// Unknown keys and values that do not parse stop start-up with an error that
// names the key and where it came from (file line, environment variable or
// flag), so a typo never silently falls back to a default. LoadOptions can name
// foreign keys (those of the RocketMQ counterpart that mean nothing here): in the
// file they are accepted and reported to the caller, which warns about them.
package props
