package fair

import "context"

type tenantKey struct{}

// WithTenant says whose request ctx carries (the MR's namespace).
func WithTenant(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, tenantKey{}, name)
}

// TenantOf is the tenant ctx carries; "" if none.
func TenantOf(ctx context.Context) string {
	s, _ := ctx.Value(tenantKey{}).(string)
	return s
}
