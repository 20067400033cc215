package v1alpha1

// The generation a managed resource was last reconciled successfully at
// (status.observedGeneration): what `kubectl wait` and GitOps tools
// compare with metadata.generation.

// SetObservedGeneration records the generation of the last successful
// reconcile.
func (mg *Team) SetObservedGeneration(g int64) { mg.Status.SetObservedGeneration(g) }

// GetObservedGeneration is the generation of the last successful reconcile.
func (mg *Team) GetObservedGeneration() int64 { return mg.Status.GetObservedGeneration() }

// SetObservedGeneration records the generation of the last successful
// reconcile.
func (mg *EscalationPolicy) SetObservedGeneration(g int64) { mg.Status.SetObservedGeneration(g) }

// GetObservedGeneration is the generation of the last successful reconcile.
func (mg *EscalationPolicy) GetObservedGeneration() int64 { return mg.Status.GetObservedGeneration() }

// SetObservedGeneration records the generation of the last successful
// reconcile.
func (mg *DeadmanSwitch) SetObservedGeneration(g int64) { mg.Status.SetObservedGeneration(g) }

// GetObservedGeneration is the generation of the last successful reconcile.
func (mg *DeadmanSwitch) GetObservedGeneration() int64 { return mg.Status.GetObservedGeneration() }

// SetObservedGeneration records the generation of the last successful
// reconcile.
func (mg *Integration) SetObservedGeneration(g int64) { mg.Status.SetObservedGeneration(g) }

// GetObservedGeneration is the generation of the last successful reconcile.
func (mg *Integration) GetObservedGeneration() int64 { return mg.Status.GetObservedGeneration() }

// SetObservedGeneration records the generation of the last successful
// reconcile.
func (mg *ServiceAccount) SetObservedGeneration(g int64) { mg.Status.SetObservedGeneration(g) }

// GetObservedGeneration is the generation of the last successful reconcile.
func (mg *ServiceAccount) GetObservedGeneration() int64 { return mg.Status.GetObservedGeneration() }
