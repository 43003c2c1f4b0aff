import { api } from '../src/trpc/server';
import { CreatePost } from './CreatePost';

export const dynamic = 'force-dynamic';

/** A server component: it reads the posts through the shared context factory, then the form. */
export default async function Home() {
  const posts = await api.post.mine();
  return (
    <main>
      <h1>Posts</h1>
      <p data-testid="server-count">{posts.length} when this page was rendered</p>
      <CreatePost />
    </main>
  );
}
