package extclient

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// AnnotationCreateAttempted on an MR says when a Create was about to POST
// its object. A Create that finds it and no recorded result knows an earlier
// create's answer may have been lost, and looks for what that create made
// before it POSTs again; an MR deleted in that state looks for it too.
const AnnotationCreateAttempted = "terdut.ryuvia.com/create-attempted-at"

// AnnotationCreateAttemptedName is the name that create was about to POST
// (the spec may be renamed before a lost create is resumed). Anyone who may
// edit the MR may write it too, so deleting the MR never goes by it: that
// deletes at most an object of the spec's own name.
const AnnotationCreateAttemptedName = "terdut.ryuvia.com/create-attempted-name"

// AnnotationCreateAttemptedOver is the external name the MR held when that
// create was about to POST: the object it recorded (made or imported) that
// was gone, so the create made it again. A re-create whose answer was lost
// is looked for when the MR is deleted only while the MR still names that
// object; a mark left from before an import does not say so.
const AnnotationCreateAttemptedOver = "terdut.ryuvia.com/create-attempted-over"

// AttemptAnnotations are the annotations MarkAttempt and UnmarkAttempt
// write: a kind that marks its attempts lists them as its own, so that its
// own marks do not wake it.
func AttemptAnnotations() []string {
	return []string{AnnotationCreateAttempted, AnnotationCreateAttemptedName, AnnotationCreateAttemptedOver}
}

const (
	errMarkAttempt   = "cannot mark the create attempt on the managed resource; nothing was created"
	errUnmarkAttempt = "cannot remove the mark of a create the server refused from the managed resource"
)

// AttemptedAt is when the MR's last create attempt was marked (zero: none).
func AttemptedAt(mg resource.Object) time.Time {
	t, _ := time.Parse(time.RFC3339, mg.GetAnnotations()[AnnotationCreateAttempted])
	return t
}

// AttemptedName is the name the MR's last create attempt POSTed.
func AttemptedName(mg resource.Object) string {
	return mg.GetAnnotations()[AnnotationCreateAttemptedName]
}

// Interrupted reports whether the MR's last create attempt (its mark) was
// not recorded as succeeded: its result may have been lost after the server
// made the object. A success recorded in the same second as the mark counts
// as recorded (both are written to the second, and a create takes less):
// else every MR that created its object would stay "interrupted", and a
// Create after a rename would take an object of the old name made by hand
// since for its own.
func Interrupted(mg resource.Object) bool {
	return LostAfter(mg, AttemptedAt(mg))
}

// MarkAttempt records on the MR, before a POST, that a create of name is
// under way: the record outlives a provider that dies before the object's ID
// is recorded. kube nil marks nothing (tests).
func MarkAttempt(ctx context.Context, kube client.Client, mg resource.Managed, name string) error {
	return patchAnnotations(ctx, kube, mg, errMarkAttempt, func(p client.Object) {
		meta.AddAnnotations(p, map[string]string{AnnotationCreateAttempted: time.Now().UTC().Format(time.RFC3339), AnnotationCreateAttemptedName: name})
		if en := meta.GetExternalName(p); en != "" {
			meta.AddAnnotations(p, map[string]string{AnnotationCreateAttemptedOver: en})
		} else {
			meta.RemoveAnnotations(p, AnnotationCreateAttemptedOver)
		}
	})
}

// UnmarkAttempt removes the marks of a create the server refused: it made
// nothing, so there is nothing to look for (a deletion would take an object
// made by hand since for that create's).
func UnmarkAttempt(ctx context.Context, kube client.Client, mg resource.Managed) error {
	return patchAnnotations(ctx, kube, mg, errUnmarkAttempt, func(p client.Object) {
		meta.RemoveAnnotations(p, AnnotationCreateAttempted, AnnotationCreateAttemptedName, AnnotationCreateAttemptedOver)
	})
}

func patchAnnotations(ctx context.Context, kube client.Client, mg resource.Managed, msg string, edit func(client.Object)) error {
	if kube == nil {
		return nil
	}
	p, ok := mg.DeepCopyObject().(client.Object)
	if !ok {
		return errors.New(msg)
	}
	edit(p)
	if err := kube.Patch(ctx, p, client.MergeFrom(mg)); err != nil {
		return errors.Wrap(err, msg)
	}
	mg.SetAnnotations(p.GetAnnotations())
	mg.SetResourceVersion(p.GetResourceVersion())
	return nil
}

// Recreates reports whether the MR's creates since its recorded object went
// are re-creates of it: it recorded a create's success before, or its last
// attempt was marked over the external name it still holds (an imported
// object, gone, made again). A mark left by a create before the MR was
// pointed at an imported object is neither.
func Recreates(mg resource.Object) bool {
	if !meta.GetExternalCreateSucceeded(mg).IsZero() {
		return true
	}
	over := mg.GetAnnotations()[AnnotationCreateAttemptedOver]
	return over != "" && over == meta.GetExternalName(mg)
}
