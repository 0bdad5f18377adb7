package ops

// SetWhereScan sets how many runs a page under Where reads at most, and
// how many a store read returns, until the returned function restores
// them.
func SetWhereScan(scan, batch int) (restore func()) {
	oldScan, oldBatch := whereScan, whereBatch
	whereScan, whereBatch = scan, batch
	return func() { whereScan, whereBatch = oldScan, oldBatch }
}

// SetActBatch sets how many runs Cancel and Retry hand the engine at once,
// until the returned function restores it.
func SetActBatch(n int) (restore func()) {
	old := actBatch
	actBatch = n
	return func() { actBatch = old }
}
