package broker

// validateFailover checks the failover keys (only when enableFailover is on, so that the
// default configuration is unaffected).
func (c Config) validateFailover(bad func(key, format string, a ...any) error) error {
	if !c.EnableFailover {
		return nil
	}
	if c.FailoverMasterRole != RoleSyncMaster && c.FailoverMasterRole != RoleAsyncMaster {
		return bad("failoverMasterRole", "%q is not SYNC_MASTER or ASYNC_MASTER", c.FailoverMasterRole)
	}
	if c.FailoverLeaseTTL <= 0 {
		return bad("failoverLeaseTtl", "must be > 0")
	}
	if c.FailoverSafetyMargin <= 0 || c.FailoverSafetyMargin >= c.FailoverLeaseTTL {
		return bad("failoverSafetyMargin", "%v must be in (0, failoverLeaseTtl=%v)", c.FailoverSafetyMargin, c.FailoverLeaseTTL)
	}
	if c.FailoverMasterRole == RoleSyncMaster && c.InSyncReplicas < 2 {
		return bad("inSyncReplicas", "failoverMasterRole=SYNC_MASTER with inSyncReplicas=%d would wait for no slave", c.InSyncReplicas)
	}
	if c.HAMasterAddress != "" {
		return bad("haMasterAddress", "set with enableFailover; the master is whoever holds the lock")
	}
	return nil
}
