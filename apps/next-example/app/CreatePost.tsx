'use client';

import { useIntentKey } from '@idem/react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useTRPC } from '../src/trpc/react';

/**
 * One intent, "publish this draft": its key is made when the draft starts, reused by every click,
 * retry and reload, renewed after a success, and dropped when the draft is edited.
 */
export function CreatePost() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [title, setTitle] = useState('');
  const intent = useIntentKey('post:new');
  const mine = useQuery(trpc.post.mine.queryOptions());
  const create = useMutation(
    trpc.post.create.mutationOptions({
      // The intent's key goes to idem's link through the call's context.
      ...(intent.key ? { trpc: { context: { idempotencyKey: intent.key } } } : {}),
      onSettled: () => queryClient.invalidateQueries(trpc.post.mine.queryFilter()),
    }),
  );
  const submit = () => {
    const key = intent.key!; // the key of this click: a second click sends the same one
    create.mutate(
      { title },
      {
        onSuccess: () => intent.complete(key),
      },
    );
  };
  const post = create.data;
  return (
    <section>
      <input
        data-testid="title"
        value={title}
        onChange={(event) => {
          setTitle(event.target.value);
          intent.discard(); // another input: the old key would be refused with 422
        }}
      />
      <button
        data-testid="create"
        disabled={intent.key === null}
        onClick={submit}
        data-key={intent.key ?? ''}
      >
        Publish
      </button>
      <p data-testid="status" data-status={create.status}>
        {create.isError ? `failed: ${create.error.message}` : create.status}
      </p>
      {post ? (
        <p
          data-testid="created"
          data-id={post.id}
          data-created-at={post.createdAt instanceof Date ? 'Date' : typeof post.createdAt}
        >
          post {post.id} published
        </p>
      ) : null}
      <p data-testid="count">{mine.data?.length ?? '…'} posts</p>
    </section>
  );
}
