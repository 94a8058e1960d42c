package failovertest

import "errors"

var errNotYet = errors.New("not yet")
