export default function ProvidersPage() {
  return (
    <section className="page">
      <h1>Providers</h1>
    </section>
  );
}
