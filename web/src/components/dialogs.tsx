// The pieces the pages' dialogs share: the frame (overlay, content, title), the Cancel and submit
// row, and a confirmation that runs an action and reports its failure in place.

import * as Dialog from "@radix-ui/react-dialog";
import { useMutation } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { ErrorNote } from "./fields";

/** A modal dialog: `describedBy` names the element that describes it (none by default). */
export function Modal({
  open,
  onOpenChange,
  title,
  describedBy,
  className = "dialog-content",
  children,
}: {
  open: boolean;
  onOpenChange: (o: boolean) => void;
  title: ReactNode;
  describedBy?: string;
  className?: string;
  children: ReactNode;
}) {
  return (
    <Dialog.Root open={open} onOpenChange={onOpenChange}>
      <Dialog.Portal>
        <Dialog.Overlay className="dialog-overlay" />
        <Dialog.Content className={className} aria-describedby={describedBy}>
          <Dialog.Title>{title}</Dialog.Title>
          {children}
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

/** Cancel (closes the dialog) and the primary button: a submit, or with `onClick` a plain button. */
export function DialogActions({
  label,
  busyLabel,
  busy,
  disabled,
  danger,
  onClick,
}: {
  label: string;
  busyLabel: string;
  busy: boolean;
  disabled?: boolean;
  danger?: boolean;
  onClick?: () => void;
}) {
  return (
    <div className="actions">
      <Dialog.Close asChild>
        <button type="button">Cancel</button>
      </Dialog.Close>
      <button
        type={onClick ? "button" : "submit"}
        className={danger ? "primary danger-fill" : "primary"}
        disabled={busy || disabled}
        onClick={onClick}
      >
        {busy ? busyLabel : label}
      </button>
    </div>
  );
}

/** Asks before `onConfirm` (a deletion, say); closes when it succeeds, shows why when it fails. */
export function ConfirmDialog(props: {
  open: boolean;
  onOpenChange: (o: boolean) => void;
  title: string;
  children: ReactNode;
  confirm: string;
  onConfirm: () => Promise<unknown>;
}) {
  const run = useMutation({ mutationFn: props.onConfirm, onSuccess: () => props.onOpenChange(false) });
  return (
    <Modal
      open={props.open}
      onOpenChange={(o) => {
        if (!o) run.reset();
        props.onOpenChange(o);
      }}
      title={props.title}
      className="dialog-content stack"
    >
      {props.children}
      <ErrorNote error={run.error} />
      <DialogActions label={props.confirm} busyLabel="Working…" busy={run.isPending} danger onClick={() => run.mutate()} />
    </Modal>
  );
}
